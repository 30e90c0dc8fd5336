/**
 * The OCR share of a full ingest (bench/ocr-bench.ts): a 60 s 1080p H.264 clip of real footage
 * with x264's default keyframe interval and a caption burned in for part of it, ingested to done
 * with the tiny CLIP model (so the model costs little), in-process (`shareInProcess`) or through a
 * compiled binary (`shareThroughBinary`: `ingest`, then `serve` for the stage record). The share is
 * the `ocr` stage's took_ms over the job's time from queued to done.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/app.ts";
import { resolveRuntime } from "../../src/cli/runtime.ts";
import { loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import type { ActiveModel, ModelCatalog } from "../../src/models/roles.ts";
import { makeBenchClip } from "./bench-clip.ts";

const ROOT = join(import.meta.dirname, "..", "..");
export const TINY_CLIP: ActiveModel = {
  name: "tiny-random-clip",
  dir: join(ROOT, "test", "fixtures", "models", "tiny-random-clip"),
  dtype: "fp32",
  modelId: "tiny-random-clip@bench",
};
export const SHARE_CAPTION = "Coastal survey, day three: the northern lighthouse";
/** When the caption is on screen, s. */
export const SHARE_CAPTION_SECS = [20, 45] as const;
const load1 = () => Math.round(loadavg()[0] * 10) / 10;

export interface ShareRow {
  how: string;
  engine: string;
  readyMs: number;
  doneMs: number;
  ocrMs: number;
  share: number;
  /** CPU seconds (this process and its children) until ready, and for the rest (OCR). */
  cpuReady: number | null;
  cpuOcr: number | null;
  ocrReason: string;
  found: boolean;
  load: [number, number];
}

/** The share clip: real footage, 1080p30, x264's default keyframe interval, the caption shown 20–45 s. */
export function makeShareClip(ffmpeg: string, out: string, fontFile: string): Promise<string> {
  const caption = `drawtext=fontfile=${fontFile}:text='${SHARE_CAPTION.replace(/[:']/g, "\\$&")}':fontsize=48:fontcolor=white:borderw=3:bordercolor=black:x=(w-tw)/2:y=h-160:enable='between(t,${SHARE_CAPTION_SECS.join(",")})'`;
  return makeBenchClip(ffmpeg, out, { secs: 60, gop: null, vf: caption });
}

/** CPU seconds used so far by this process and its reaped children (/proc/self/stat), or null. */
function cpuSeconds(): number | null {
  try {
    const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return null;
  }
}

/** One ingest of `clip` in a fresh in-process app with `engine`; searches the caption's "lighthouse". */
export async function shareInProcess(work: string, clip: string, engine: "ppocr" | "tesseract"): Promise<ShareRow> {
  const dataDir = join(work, `share-${engine}-${Date.now()}`);
  mkdirSync(dataDir, { recursive: true });
  const env = { VSEARCH_LOG_LEVEL: "warn", VSEARCH_OCR_ENGINE: engine };
  const config = loadConfig({ dataDir, logLevel: "warn" }, env);
  const models: ModelCatalog = { active: (r) => (r === "image-text" ? TINY_CLIP : null) };
  const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("warn"), models });
  const l0 = load1();
  try {
    const acct = await app.services.accounts.createAccount({ name: "bench" });
    const col = await app.services.collections.create(acct.id, { name: "bench" });
    await app.internals.queue.start();
    const c0 = cpuSeconds();
    const { job_id, video_id } = await app.services.uploads.ingestFile(acct.id, col.id, clip, { force: true });
    if (!job_id) throw new Error(`${clip}: not queued`);
    const start = performance.now();
    let readyMs = NaN;
    let cReady: number | null = null;
    for (;;) {
      const job = await app.services.jobs.get(acct.id, job_id);
      if (Number.isNaN(readyMs) && (await app.services.videos.get(acct.id, video_id)).status === "ready") {
        readyMs = performance.now() - start;
        cReady = cpuSeconds();
      }
      if (job.status === "failed") throw new Error(`${clip}: ${JSON.stringify(job.error)}`);
      if (job.status === "done") break;
      await Bun.sleep(5);
    }
    const doneMs = performance.now() - start;
    const c1 = cpuSeconds();
    const v = await app.services.videos.get(acct.id, video_id);
    const res = await app.services.search.search(acct.id, {
      query: "lighthouse",
      modes: ["ocr"],
      page: 1,
      perPage: 10,
      includeHidden: false,
      includeThumbnailBase64: false,
    });
    const ocrMs = v.stages.ocr?.took_ms ?? 0;
    return {
      how: "in-process",
      engine,
      readyMs,
      doneMs,
      ocrMs,
      share: ocrMs / doneMs,
      cpuReady: c0 !== null && cReady !== null ? cReady - c0 : null,
      cpuOcr: cReady !== null && c1 !== null ? c1 - cReady : null,
      ocrReason: `${v.stages.ocr?.status}: ${v.stages.ocr?.reason}`,
      found: res.videos.some((x) => x.segments.some((s) => /lighthouse/i.test(s.text_content ?? ""))),
      load: [l0, load1()],
    };
  } finally {
    await app.close();
  }
}

/**
 * The same through a compiled binary (e.g. main's, for "before"): `models import` the tiny CLIP,
 * `ingest` (waits until done), then `serve` to read the video's stages and the job's times.
 */
export async function shareThroughBinary(
  work: string,
  clip: string,
  bin: string,
  label: string,
  engine: "ppocr" | "tesseract",
): Promise<ShareRow> {
  const dataDir = join(work, `bin-${label}-${engine}-${Date.now()}`);
  const env = { HOME: work, TMPDIR: work, PATH: "/usr/bin:/bin", VSEARCH_OCR_ENGINE: engine };
  const vs = async (args: string[]) => {
    const p = Bun.spawn([bin, "--data-dir", dataDir, "--json", ...args], { env, stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([
      new Response(p.stdout).text(),
      new Response(p.stderr).text(),
      p.exited,
    ]);
    if (code !== 0) throw new Error(`${bin} ${args.join(" ")}: exit ${code}: ${err.slice(-500)}`);
    return JSON.parse(out);
  };
  await vs(["models", "import", TINY_CLIP.dir, "--role", "image-text"]);
  const acct = (await vs(["accounts", "create", "--name", "bench"])).id as string;
  const key = (await vs(["keys", "create", "--account", acct, "--name", "bench"])).key as string;
  const l0 = load1();
  const ingest = await vs(["ingest", clip, "--account", acct, "--collection", "bench"]);
  const videoId = ingest.files[0].video_id as string;
  const server = Bun.spawn([bin, "--data-dir", dataDir, "--json", "serve", "--port", "0"], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    const reader = (server.stdout as ReadableStream<Uint8Array>).getReader();
    let text = "";
    let url: string | null = null;
    for (const deadline = Date.now() + 60_000; !url && Date.now() < deadline; ) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      url = /https?:\/\/127\.0\.0\.1:\d+/.exec(text)?.[0] ?? null;
    }
    if (!url) throw new Error(`${bin} serve did not start: ${text}`);
    const get = async (path: string) =>
      (await (await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } })).json()).data;
    const v = await get(`/v1/videos/${videoId}`);
    const job = (await get(`/v1/jobs?video_id=${videoId}`))[0];
    const doneMs = Date.parse(job.updated_at) - Date.parse(job.created_at);
    const ocrMs = v.stages.ocr?.took_ms ?? 0;
    const form = new URLSearchParams({ query: "lighthouse", modes: "ocr" });
    const found = await (
      await fetch(`${url}/v1/search`, {
        method: "POST",
        body: form,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
      })
    ).json();
    return {
      how: `binary ${label}`,
      engine,
      readyMs: NaN,
      doneMs,
      ocrMs,
      share: ocrMs / doneMs,
      cpuReady: null,
      cpuOcr: null,
      ocrReason: `${v.stages.ocr?.status}: ${v.stages.ocr?.reason}`,
      found: (found.data ?? []).length > 0,
      load: [l0, load1()],
    };
  } finally {
    server.kill("SIGTERM");
    await server.exited;
  }
}
