/**
 * Idle OCR workers leave memory: each tesseract worker (wasm memory and a JavaScript heap, ~25 MB)
 * ends after `model_idle_unload_secs` without a frame, never while one is being read, and the
 * next frame starts a fresh one. A real app reads two videos with an idle close between them.
 */
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { OcrEngine, type GrayFrame } from "../../src/ocr/engine.ts";
import { devOcrPaths } from "../../src/ocr/paths.ts";
import { createTenant, json, metric, startTestApp, uploadAndWait, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { mediaFixture } from "../helpers/media.ts";
import { fixedCatalog } from "../helpers/models.ts";
import { until } from "../helpers/wait.ts";
import { readFileSync } from "node:fs";

const FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const media = scratchDir("ocr-idle");

/** 2 s of 1280×720 navy with one line of white text. */
const slide = (name: string, text: string) =>
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "color=c=navy:size=1280x720:rate=5:duration=2",
      "-vf",
      `drawtext=fontfile=${FONT}:text='${text}':fontcolor=white:fontsize=40:x=120:y=320`,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, `${name}.mp4`),
  );

async function grayFrame(text: string): Promise<GrayFrame> {
  const out = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:size=1280x720",
      "-vf",
      `drawtext=fontfile=${FONT}:text='${text}':fontcolor=white:fontsize=40:x=100:y=100,format=gray`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
    ],
    join(media, `${text.replace(/\W/g, "_")}.gray`),
  );
  return { width: 1280, height: 720, pixels: new Uint8Array(readFileSync(out)) };
}

const ocrSearch = async (t: TestApp, key: string, query: string) => {
  const body = new URLSearchParams({ query, modes: "ocr" }).toString();
  return (
    await json(
      await t.request("POST", "/v1/search", {
        token: key,
        body,
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
    )
  ).data;
};

describe("idle OCR workers", () => {
  let t: TestApp | undefined;
  afterAll(() => t?.close());

  test("the worker ends after the idle time, memory is handed back, and the next video's text is read by a fresh one", async () => {
    const [first, second] = await Promise.all([
      slide("first", "Quarterly revenue forecast"),
      slide("second", "Harbour lighthouse tour"),
    ]);
    t = await startTestApp(
      { VSEARCH_MODEL_IDLE_UNLOAD_SECS: "10", VSEARCH_RATE_LIMIT_JOBS: "100000", VSEARCH_RATE_LIMIT_VIDEOS: "100000" },
      { models: fixedCatalog({}) },
    );
    await t.app.start();
    const tenant = await createTenant(t);
    const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } })))
      .data.id;
    expect(await metric(t, "vsearch_ocr_workers")).toBe(0); // none before the first frame with text

    const a = await uploadAndWait(t, tenant, col, first);
    expect(a.job.status).toBe("done");
    // The idle time runs from the last frame read: the worker that read this video is still there.
    expect(await metric(t, "vsearch_ocr_workers")).toBe(1);
    expect((await ocrSearch(t, tenant.key, "revenue")).map((v: any) => v.video_id)).toEqual([a.video_id]);
    expect(await until(async () => (await metric(t!, "vsearch_ocr_workers")) === 0, 20_000, 100)).toBe(true);
    // Nothing in flight: the idle pass (1 s after the close) hands memory back.
    expect(await until(async () => ((await metric(t!, "vsearch_idle_memory_passes")) ?? 0) >= 1, 10_000, 100)).toBe(
      true,
    );

    const b = await uploadAndWait(t, tenant, col, second);
    expect(b.job.status).toBe("done");
    const v = (await json(await t.request("GET", `/v1/videos/${b.video_id}`, { token: tenant.key }))).data;
    expect(v.stages.ocr).toMatchObject({ status: "ran", count: 1 });
    expect((await ocrSearch(t, tenant.key, "lighthouse")).map((x: any) => x.video_id)).toEqual([b.video_id]);
  }, 240_000);

  test("ingest warms the OCR worker while the frames decode: it is up after a video without any text, which the engine never read", async () => {
    const blank = await mediaFixture("colors"); // flat colours: nothing that looks like text
    const w = await startTestApp({ VSEARCH_RATE_LIMIT_JOBS: "100000" }, { models: fixedCatalog({}) });
    try {
      await w.app.start();
      const tenant = await createTenant(w);
      const col = (await json(await w.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } })))
        .data.id;
      expect(await metric(w, "vsearch_ocr_workers")).toBe(0);
      const v = await uploadAndWait(w, tenant, col, blank);
      expect(v.job.status).toBe("done");
      const video = (await json(await w.request("GET", `/v1/videos/${v.video_id}`, { token: tenant.key }))).data;
      expect(video.stages.ocr.reason).toMatch(/ 0 read\b/); // no frame went to the engine…
      expect(await metric(w, "vsearch_ocr_workers")).toBe(1); // …yet its worker is up: ingest warmed it
    } finally {
      await w.close();
    }
  }, 120_000);

  test("an engine never ends a worker while a frame is read or waits; closeIdle ends them once all are idle", async () => {
    const closed: number[] = [];
    const engine = new OcrEngine({
      paths: devOcrPaths(),
      workers: 1,
      idleCloseMs: 60_000,
      onIdleClosed: (n) => closed.push(n),
    });
    try {
      const frame = await grayFrame("Platform nine");
      const reads = [engine.recognize(frame), engine.recognize(frame)];
      // One reading, one waiting for the single worker: nothing is idle, however often asked.
      let ended = 0;
      let done = false;
      void Promise.all(reads).finally(() => (done = true));
      while (!done) {
        expect(engine.busy).toBe(true);
        ended += await engine.closeIdle();
        await Bun.sleep(5);
      }
      expect(ended).toBe(0);
      for (const r of await Promise.all(reads)) expect(r.map((l) => l.text)).toEqual(["Platform nine"]);
      expect(engine.running).toBe(1);
      expect(await engine.closeIdle()).toBe(1);
      expect(engine.running).toBe(0);
      expect(closed).toEqual([1]);
      // The next frame starts a worker again.
      expect((await engine.recognize(frame)).map((l) => l.text)).toEqual(["Platform nine"]);
      expect(engine.running).toBe(1);
    } finally {
      await engine.close();
    }
  }, 120_000);

  test("warm() starts one tesseract worker before any frame, once however often it is called", async () => {
    const engine = new OcrEngine({ paths: devOcrPaths(), workers: 2 });
    try {
      engine.warm();
      engine.warm();
      expect(engine.running).toBe(1);
      expect(await until(async () => !engine.busy, 60_000, 10)).toBe(true);
      engine.warm(); // one is up: nothing more
      expect(engine.running).toBe(1);
      expect(await engine.closeIdle()).toBe(1);
    } finally {
      await engine.close();
    }
  }, 120_000);

  test("the idle timer ends the worker idleCloseMs after its last frame", async () => {
    const engine = new OcrEngine({ paths: devOcrPaths(), workers: 1, idleCloseMs: 200 });
    try {
      const frame = await grayFrame("Gate four");
      await engine.recognize(frame);
      expect(engine.running).toBe(1);
      expect(await until(async () => engine.running === 0, 10_000)).toBe(true);
      expect((await engine.recognize(frame)).map((l) => l.text)).toEqual(["Gate four"]);
    } finally {
      await engine.close();
    }
  }, 120_000);
});
