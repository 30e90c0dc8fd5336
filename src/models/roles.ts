/**
 * The model vocabulary every layer shares: the roles a model can fill and the catalogue that says
 * which installed model fills each. Here, in models/, so the pipeline, search and the inference
 * host read it from where models are managed instead of from each other.
 */
import type { Dtype } from "../inference/model-files.ts";

export type ModelRole = "image-text" | "speech" | "text";

export interface ActiveModel {
  name: string;
  dir: string;
  dtype: Dtype;
  modelId: string;
}

/** Which model is installed for a role (backed by the model registry). */
export interface ModelCatalog {
  active(role: ModelRole): ActiveModel | null;
}
