/**
 * Piscina task module of the PP-OCR pool (ppocr/engine.ts): each worker thread loads the detector
 * and the recognizer once (model.ts) and runs one task at a time. Results come back in an envelope
 * (`{ok, value | error}`): an Error's own fields do not survive the thread boundary.
 *
 * Dev/tests: Piscina starts this file as TypeScript. The compiled binary lists it as an extra
 * entry point (build.ts) and the pool hands Piscina its embedded path; the thread bootstrap
 * (src/runtime/piscina-worker.ts) has checked that the extracted ONNX Runtime is there.
 */
import type { GrayFrame } from "../engine.ts";
import type { TextBox } from "./detect.ts";
import { PpOcrModel, type PpOcrFiles } from "./model.ts";

export type PpOcrTask =
  | { kind: "load"; files: PpOcrFiles }
  | { kind: "detect"; files: PpOcrFiles; frame: GrayFrame; maxSide: number }
  | { kind: "recognize"; files: PpOcrFiles; crops: GrayFrame[] };

export type PpOcrReply =
  | { ok: true; boxes?: TextBox[]; texts?: { text: string; confidence: number }[]; loadMs: number }
  | { ok: false; message: string };

/** This thread's model (the only mutable module state), keyed by its files. */
let loaded: { key: string; model: Promise<PpOcrModel> } | null = null;

async function model(files: PpOcrFiles): Promise<{ model: PpOcrModel; loadMs: number }> {
  const key = `${files.det}\0${files.rec}\0${files.keys}`;
  if (loaded?.key === key) return { model: await loaded.model, loadMs: 0 };
  const t0 = performance.now();
  const previous = loaded;
  const entry = { key, model: PpOcrModel.load(files) };
  loaded = entry;
  // A failed load is forgotten: the next task tries again.
  entry.model.catch(() => {
    if (loaded === entry) loaded = null;
  });
  if (previous) void previous.model.then((m) => m.release()).catch(() => {});
  return { model: await entry.model, loadMs: performance.now() - t0 };
}

export default async function handlePpOcrTask(task: PpOcrTask): Promise<PpOcrReply> {
  try {
    const { model: m, loadMs } = await model(task.files);
    if (task.kind === "load") {
      if (loadMs > 0) await m.warmUp();
      return { ok: true, loadMs };
    }
    if (task.kind === "detect") return { ok: true, boxes: await m.detect(task.frame, task.maxSide), loadMs };
    const texts: { text: string; confidence: number }[] = [];
    for (const crop of task.crops)
      texts.push(await m.recognize(crop, { x: 0, y: 0, w: crop.width, h: crop.height, score: 1 }));
    return { ok: true, texts, loadMs };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}
