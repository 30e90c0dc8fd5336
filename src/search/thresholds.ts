/**
 * The per-account, per-mode score cuts (docs/SEARCH.md). A segment is kept when its calibrated
 * `score` ≥ the threshold named by its `threshold_key`. Feedback moves a threshold by one `step`
 * per feedback row (`down` raises it, `up` lowers it), never outside [min, max]; replacing or
 * clearing feedback takes its step back out.
 */

export type Mode = "video" | "scene" | "transcript" | "ocr";
export const MODES: readonly Mode[] = ["video", "scene", "transcript", "ocr"];
/** Modes that match words, not embeddings: they need a text query and no model. */
export const LEXICAL_MODES: readonly Mode[] = ["transcript", "ocr"];

export interface ThresholdSpec {
  key: string;
  mode: Mode;
  defaultValue: number;
  min: number;
  max: number;
  step: number;
  what: string;
}

export const THRESHOLDS: readonly ThresholdSpec[] = [
  {
    key: "video:default",
    mode: "video",
    defaultValue: 0.5,
    min: 0.25,
    max: 0.85,
    step: 0.02,
    what: "frame moments: calibrated similarity (0.5 = z 3 against the query's null on this account)",
  },
  {
    key: "scene:default",
    mode: "scene",
    defaultValue: 0.5,
    min: 0.25,
    max: 0.85,
    step: 0.02,
    what: "shots by their mean embedding: calibrated similarity, as video:default",
  },
  {
    key: "scene:text",
    mode: "scene",
    defaultValue: 0.5,
    min: 0.25,
    max: 1,
    step: 0.05,
    what: "shots by labels and caption: share of the query's words found there",
  },
  {
    key: "transcript:default",
    mode: "transcript",
    defaultValue: 0.5,
    min: 0.2,
    max: 1,
    step: 0.05,
    what: "transcript segments: share of the query's IDF weight the segment contains (BM25 orders them)",
  },
  {
    key: "ocr:default",
    mode: "ocr",
    defaultValue: 0.5,
    min: 0.2,
    max: 1,
    step: 0.05,
    what: "on-screen text lines: share of the query's IDF weight the line shows (BM25 orders them)",
  },
];

const BY_KEY = new Map(THRESHOLDS.map((t) => [t.key, t]));

export const thresholdSpec = (key: string): ThresholdSpec | undefined => BY_KEY.get(key);

export const clampThreshold = (spec: ThresholdSpec, v: number): number => Math.min(spec.max, Math.max(spec.min, v));

/** The signed step one feedback row applies to its threshold. */
export const feedbackStep = (spec: ThresholdSpec, signal: "up" | "down"): number =>
  signal === "down" ? spec.step : -spec.step;
