import { join } from "node:path";
import type { ActiveModel, ModelCatalog, ModelRole } from "../../src/models/roles.ts";

export const FIXTURE_MODELS = join(import.meta.dirname, "..", "fixtures", "models");

export const tinyClip: ActiveModel = {
  name: "tiny-random-clip",
  dir: join(FIXTURE_MODELS, "tiny-random-clip"),
  dtype: "fp32",
  modelId: "tiny-random-clip@test",
};
export const tinyWhisper: ActiveModel = {
  name: "tiny-random-whisper",
  dir: join(FIXTURE_MODELS, "tiny-random-whisper"),
  dtype: "fp32",
  modelId: "tiny-random-whisper@test",
};

/** A fixed catalog for tests that need models but not the registry. */
export function fixedCatalog(models: Partial<Record<ModelRole, ActiveModel>>): ModelCatalog {
  return { active: (role) => models[role] ?? null };
}
