/**
 * The one sentence every place that meets a missing model ends with: the command that installs
 * one for the role. Ingest stages, search's `skipped_modes`, `doctor` and the model commands all
 * use it, so the advice is the same everywhere. Pure (the built-in list is bundled).
 */
import { builtinManifest } from "./manifest.ts";
import type { ModelRole } from "./types.ts";

/** `vsearch models pull <default for the role>` (connected), `vsearch models import … --role R` (air-gapped). */
export function modelFix(role: ModelRole): string {
  const b = builtinManifest();
  const name =
    b.default.find((n) => b.models.find((m) => m.name === n)?.role === role) ??
    b.models.find((m) => m.role === role)?.name;
  const pull = name ? `vsearch models pull ${name}` : "vsearch models pull";
  return `${pull} (air-gapped: vsearch models import <dir|tar> --role ${role})`;
}

/** "no speech model installed; fix: vsearch models pull whisper-tiny.en (air-gapped: …)". */
export const missingModel = (role: ModelRole): string => `no ${role} model installed; fix: ${modelFix(role)}`;
