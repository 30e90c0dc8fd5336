import { modelFix } from "../models/hints.ts";
import type { ActiveModel, ModelRole } from "../models/roles.ts";

/** One missing piece `doctor` and the dashboard's system page report, with its fix. */
export interface ModelWarning {
  role: ModelRole;
  code: "MODEL_NOT_INSTALLED" | "REINDEX_NEEDED";
  message: string;
  videos: number;
  fix: string;
}

type Coverage = Record<"image-text" | "speech", { without: string[]; stale: string[] }>;

/**
 * Not failures (the service runs without models) but each missing piece: a role with no model (and
 * how many videos were indexed without it), or videos indexed before the active model (reindex).
 * `doctor` (instance-wide) and GET /v1/system/status (the caller's account) say the same.
 */
export function modelWarnings(active: Record<"image-text" | "speech", ActiveModel | null>, coverage: Coverage) {
  const warnings: ModelWarning[] = [];
  for (const [role, adds] of [
    ["image-text", "visual search (video and scene modes) and shot labels"],
    ["speech", "transcripts (transcript mode)"],
  ] as const) {
    const m = active[role];
    const c = coverage[role];
    if (!m) {
      const n = c.without.length;
      warnings.push({
        role,
        code: "MODEL_NOT_INSTALLED",
        message: `no ${role} model installed: no ${adds}; ${n} video${n === 1 ? "" : "s"} indexed without it`,
        videos: n,
        fix: `${modelFix(role)}, then vsearch reindex`,
      });
    } else if (c.stale.length) {
      const n = c.stale.length;
      warnings.push({
        role,
        code: "REINDEX_NEEDED",
        message: `${n} video${n === 1 ? " was" : "s were"} indexed without ${m.modelId} (before it was installed, or with another version)`,
        videos: n,
        fix: "vsearch reindex",
      });
    }
  }
  return warnings;
}
