import type { ShotInput } from "../indexing/store.ts";
import type { Shot } from "../media/shots.ts";
import type { ActiveModel } from "../models/roles.ts";
import type { PipelineDeps } from "./deps.ts";
import { labelPrompt, meanVector, SCENE_LABELS, zeroShotLabels } from "./labels.ts";
import type { EmbeddedFrame } from "./stage-frames.ts";

/**
 * Per shot: the keyframe (the sampled frame nearest the shot's middle), the mean embedding of
 * its frames, and zero-shot labels from the shipped vocabulary. Label embeddings are computed
 * once per model and reused.
 */
export function buildScenes(labelVectors: Float32Array[] | null, shots: Shot[], frames: EmbeddedFrame[]): ShotInput[] {
  return shots.map((s) => {
    const own = frames.filter((f) => f.shotIndex === s.index);
    const mid = (s.start + s.end) / 2;
    const keyframe = own.length
      ? own.reduce((a, b) => (Math.abs(b.timestamp - mid) < Math.abs(a.timestamp - mid) ? b : a)).timestamp
      : s.start;
    const embedding = meanVector(own.map((f) => f.vector));
    return {
      shotIndex: s.index,
      start: s.start,
      end: s.end,
      keyframe,
      thumbnailPath: null,
      labels: embedding && labelVectors ? zeroShotLabels(embedding, labelVectors, SCENE_LABELS) : [],
      caption: null,
      embedding,
    };
  });
}

/** Label text embeddings per model, computed once per pipeline instance and reused. */
export class LabelEmbeddings {
  private readonly byModel = new Map<string, Promise<Float32Array[]>>();

  constructor(private readonly d: PipelineDeps) {}

  get(model: ActiveModel): Promise<Float32Array[]> {
    let p = this.byModel.get(model.modelId);
    if (!p) {
      p = this.d
        .pool()
        .then((pool) => pool.embedTexts({ modelDir: model.dir, dtype: model.dtype }, SCENE_LABELS.map(labelPrompt)))
        .then((e) => e.vectors.map((v) => new Float32Array(v)));
      p.catch(() => this.byModel.delete(model.modelId));
      this.byModel.set(model.modelId, p);
    }
    return p;
  }
}
