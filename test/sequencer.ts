/**
 * The order test files start in: longest first, across both projects (vitest.config.ts
 * `sequence.sequencer`). With two workers the run ends when the last long file does, so a
 * 90-second file that starts near the end is a 90-second tail on one worker while the other idles.
 *
 * vitest's own sequencer knows each file's duration only from its cache (node_modules/.vite), which a
 * fresh clone — CI — does not have: it then runs one project after the other, larger files first.
 * Here the durations come from the cache when it has them, else from test/file-times.json, the
 * per-file times of a full run (`bun scripts/file-times.ts <vitest JSON report>` writes it; a stale
 * entry only costs order, never a result). A file in neither starts first, as vitest's does.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { TestSpecification } from "vitest/node";
import { BaseSequencer } from "vitest/node";

const TIMES_FILE = join(import.meta.dirname, "file-times.json");
/** A file with no recorded time sorts as this long: before every known one. */
const UNKNOWN = 1e9;

/** `project:path` → seconds, from test/file-times.json (empty when it is missing or unreadable). */
function recordedTimes(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(TIMES_FILE, "utf8")).seconds ?? {};
  } catch {
    return {};
  }
}

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const recorded = recordedTimes();
    const root = this.ctx.config.root;
    const seconds = (spec: TestSpecification): number => {
      const key = `${spec.project.name}:${relative(root, spec.moduleId)}`;
      const cached = this.ctx.cache.getFileTestResults(key);
      if (cached && cached.duration > 0) return cached.duration / 1000;
      // Unknown: first (it may be long), as vitest's own sequencer does.
      return recorded[key] ?? UNKNOWN;
    };
    const order = new Map(files.map((f) => [f, seconds(f)]));
    return [...files].sort((a, b) => {
      const groups = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      return groups !== 0 ? groups : order.get(b)! - order.get(a)!;
    });
  }
}
