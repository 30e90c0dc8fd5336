import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { createApp, type App } from "../../src/app.ts";
import { resolveRuntime } from "../../src/cli/runtime.ts";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import { devOcrPaths } from "../../src/ocr/paths.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog } from "../helpers/models.ts";

const media = scratchDir("ocr-progressive");
const FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/** 3 s of a slide with one line of text. */
const slide = () =>
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:size=640x360:rate=10:duration=3",
      "-vf",
      `drawtext=fontfile=${FONT}:text='Annual report':fontsize=40:fontcolor=white:x=60:y=150`,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "slide.mp4"),
  );

/** An app on a fresh data dir (no models), with `env` and optionally other OCR paths; indexes one clip through HTTP. */
async function indexWith(env: Record<string, string>, ocrPaths?: ReturnType<typeof devOcrPaths>) {
  const dir = mkdtempSync(join(tmpdir(), "vsearch-ocr-prog-"));
  const config = loadConfig({ dataDir: dir, logLevel: "silent" }, { VSEARCH_RATE_LIMIT_JOBS: "100000", ...env });
  const runtime = await resolveRuntime(config);
  const app: App = await createApp(config, {
    runtime: { ...runtime, ...(ocrPaths ? { ocr: ocrPaths } : {}) },
    logger: createLogger("silent"),
    models: fixedCatalog({}),
  });
  await app.start();
  const s = app.services;
  const account = await s.accounts.createAccount({ name: "p", plan: "enterprise" });
  const key = (await s.apiKeys.create(account.id, { name: "k", permissions: "all" })).key;
  const req = (method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}) =>
    Promise.resolve(
      app.fetch(
        new Request(`http://localhost${path}`, {
          method,
          body,
          headers: { authorization: `Bearer ${key}`, ...headers },
        }),
      ),
    ).then((r) => r.json() as Promise<any>);
  const col = (
    await req("POST", "/v1/collections", JSON.stringify({ name: "c" }), { "content-type": "application/json" })
  ).data.id;
  const fd = new FormData();
  fd.append("collection_id", col);
  fd.append("file", Bun.file(await slide()), "slide.mp4");
  const { data } = await req("POST", "/v1/upload", fd);
  const deadline = Date.now() + 90_000;
  let job: any;
  while (Date.now() < deadline) {
    job = (await req("GET", `/v1/jobs/${data.job_id}`)).data;
    if (job.status === "done" || job.status === "failed") break;
    await Bun.sleep(50);
  }
  const video = (await req("GET", `/v1/videos/${data.video_id}`)).data;
  const search = await req("POST", "/v1/search", "query=annual+report", {
    "content-type": "application/x-www-form-urlencoded",
  });
  await app.close();
  rmSync(dir, { recursive: true, force: true });
  return { job, video, search };
}

describe("progressive indexing when OCR cannot or may not run", () => {
  afterAll(() => rmSync(media, { recursive: true, force: true }));

  test("ocr_threads = 0: the stage is skipped with the reason; the job is done, nothing pending", async () => {
    const { job, video, search } = await indexWith({ VSEARCH_OCR_THREADS: "0" });
    expect(job).toMatchObject({ status: "done", stages_pending: [] });
    expect(video.status).toBe("ready");
    expect(video.stages.ocr).toEqual({ status: "skipped", reason: "on-screen text is turned off (ocr_threads = 0)" });
    expect(search.data).toEqual([]);
  }, 120_000);

  test("an OCR failure is that stage's outcome: the job is still done and the video ready (tesseract)", async () => {
    // The English data is missing, so the tesseract worker cannot load.
    const broken = { ...devOcrPaths(), langDir: join(media, "no-such-folder") };
    const { job, video } = await indexWith({ VSEARCH_OCR_ENGINE: "tesseract" }, broken);
    expect(job).toMatchObject({ status: "done", stages_pending: [], error: null });
    expect(video.status).toBe("ready");
    expect(video.stages.thumbnails.status).toBe("ran");
    expect(video.stages.ocr.status).toBe("failed");
    expect(video.stages.ocr.reason).toMatch(/^OCR_FAILED: the OCR language data is missing/);
  }, 120_000);

  test("an OCR failure is that stage's outcome (PP-OCR: its recognizer is missing)", async () => {
    const paths = devOcrPaths();
    const broken = { ...paths, ppocr: { ...paths.ppocr, rec: join(media, "no-such-model.onnx") } };
    const { job, video } = await indexWith({ VSEARCH_OCR_ENGINE: "ppocr" }, broken);
    expect(job).toMatchObject({ status: "done", stages_pending: [], error: null });
    expect(video.status).toBe("ready");
    expect(video.stages.ocr.status).toBe("failed");
    expect(video.stages.ocr.reason).toMatch(/^OCR_FAILED: the PP-OCR model file is missing \(.*no-such-model\.onnx\)/);
  }, 120_000);

  test("ocr_threads must be 0–8", () => {
    expect(() => loadConfig({ dataDir: "/tmp/x" }, { VSEARCH_OCR_THREADS: "9" })).toThrow(ConfigError);
    expect(() => loadConfig({ dataDir: "/tmp/x" }, { VSEARCH_OCR_THREADS: "1.5" })).toThrow(/0 to 8/);
    expect(loadConfig({ dataDir: "/tmp/x" }, {}).ocrThreads).toBe(1);
  });

  test("ocr_engine is ppocr or tesseract; the OCR bounds are positive numbers", () => {
    expect(loadConfig({ dataDir: "/tmp/x" }, {}).ocrEngine).toBe("ppocr");
    expect(loadConfig({ dataDir: "/tmp/x" }, { VSEARCH_OCR_ENGINE: "tesseract" }).ocrEngine).toBe("tesseract");
    expect(() => loadConfig({ dataDir: "/tmp/x" }, { VSEARCH_OCR_ENGINE: "easyocr" })).toThrow(/ppocr or tesseract/);
    expect(() => loadConfig({ dataDir: "/tmp/x" }, { VSEARCH_OCR_MAX_FRAMES_PER_MINUTE: "0" })).toThrow(/1\.\.600/);
    expect(() => loadConfig({ dataDir: "/tmp/x" }, { VSEARCH_OCR_BUDGET_SECS_PER_MINUTE: "0.5" })).toThrow(/≥ 1/);
    expect(loadConfig({ dataDir: "/tmp/x" }, {})).toMatchObject({
      ocrMaxFramesPerMinute: 30,
      ocrBudgetSecsPerMinute: 30,
    });
  });
});
