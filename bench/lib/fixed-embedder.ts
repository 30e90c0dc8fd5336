import type { QueryEmbedder } from "../../src/search/embedder.ts";

/** Every text maps to one fixed query vector: the cost a bench measures is the index's, not a model's. */
export class FixedEmbedder implements QueryEmbedder {
  constructor(
    private readonly q: Float32Array,
    private readonly model: string,
  ) {}
  available = () => true;
  modelId = () => this.model;
  async embedText(texts: string[]): Promise<Float32Array[]> {
    return texts.map(() => this.q);
  }
  async embedImageRgb(): Promise<Float32Array> {
    throw new Error("not used");
  }
}
