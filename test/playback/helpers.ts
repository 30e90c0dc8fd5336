/** Playback tests: the formats upload accepts but browsers cannot play, made in setup; upload and wait helpers. */
import { join } from "node:path";
import { expect } from "vitest";
import { json, type Tenant, type TestApp } from "../helpers/app.ts";
import { ffmpeg } from "../helpers/ffmpeg.ts";

const SECS = 2;
const pattern = (size: string, rate = 25) => [
  "-f",
  "lavfi",
  "-i",
  `testsrc2=size=${size}:rate=${rate}:duration=${SECS}`,
];
const tone = ["-f", "lavfi", "-i", `sine=frequency=440:duration=${SECS}`];

/**
 * One clip of each problem format of stack-findings "What a browser can play", plus an H.264
 * control. 2 s, small frames: what matters is the codec and container, not the size.
 */
export const PROBLEM_FORMATS = {
  "mpeg4-avi": {
    file: "mpeg4.avi",
    args: [...pattern("320x240"), ...tone, "-c:v", "mpeg4", "-q:v", "5", "-c:a", "mp2"],
  },
  "mpeg2-ts": {
    file: "mpeg2.ts",
    args: [...pattern("320x240"), ...tone, "-c:v", "mpeg2video", "-q:v", "5", "-c:a", "mp2", "-f", "mpegts"],
  },
  "mpeg1-mpg": {
    file: "mpeg1.mpg",
    args: [...pattern("320x240"), ...tone, "-c:v", "mpeg1video", "-q:v", "5", "-c:a", "mp2", "-f", "mpeg"],
  },
  "h263-3gp": {
    file: "h263.3gp",
    args: [
      ...pattern("352x288", 15),
      ...tone,
      "-c:v",
      "h263",
      "-q:v",
      "5",
      "-c:a",
      "aac",
      "-ar",
      "8000",
      "-ac",
      "1",
      "-f",
      "3gp",
    ],
  },
  "hevc10-mp4": {
    file: "hevc10.mp4",
    args: [
      ...pattern("320x240"),
      ...tone,
      "-c:v",
      "libx265",
      "-preset",
      "ultrafast",
      "-x265-params",
      "log-level=error",
      "-pix_fmt",
      "yuv420p10le",
      "-tag:v",
      "hvc1",
      "-c:a",
      "aac",
    ],
  },
  "h264-mp4": {
    file: "h264.mp4",
    args: [
      ...pattern("320x240"),
      ...tone,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-movflags",
      "+faststart",
    ],
  },
} as const;
export type ProblemFormat = keyof typeof PROBLEM_FORMATS;

export async function makeFormat(dir: string, name: ProblemFormat): Promise<string> {
  const f = PROBLEM_FORMATS[name];
  return ffmpeg([...f.args, "-shortest"], join(dir, f.file));
}

/** Anything that answers API requests like TestApp does (a restarted app on the same data dir, too). */
export type Requester = Pick<TestApp, "request">;

export async function collection(t: Requester, tenant: Pick<Tenant, "key">, name = "c"): Promise<string> {
  return (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name } }))).data.id;
}

/** Uploads through the HTTP API; resolves once the ingest job is done (the video is searchable). */
export async function uploadAndIndex(
  t: Requester,
  tenant: Pick<Tenant, "key">,
  collectionId: string,
  path: string,
): Promise<string> {
  const fd = new FormData();
  fd.append("collection_id", collectionId);
  // Always a new video, even of bytes the collection holds (else the answer is that video, 200).
  fd.append("force", "true");
  fd.append("file", Bun.file(path), path.split("/").pop());
  const res = await t.request("POST", "/v1/upload", { token: tenant.key, body: fd });
  expect(res.status).toBe(202);
  const { data } = await json(res);
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const job = (await json(await t.request("GET", `/v1/jobs/${data.job_id}`, { token: tenant.key }))).data;
    if (job.status === "failed") throw new Error(`ingest failed: ${JSON.stringify(job.error)}`);
    if (job.status === "done") return data.video_id;
    await Bun.sleep(100);
  }
  throw new Error("ingest did not finish in 120 s");
}

/** Polls the video record until its rendition is settled (ready, not_needed or failed). */
export async function waitForRendition(
  t: Requester,
  tenant: Pick<Tenant, "key">,
  videoId: string,
  timeoutMs = 120_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let v: any;
  while (Date.now() < deadline) {
    v = (await json(await t.request("GET", `/v1/videos/${videoId}`, { token: tenant.key }))).data;
    if (v.rendition && ["ready", "not_needed", "failed"].includes(v.rendition.status)) return v;
    await Bun.sleep(150);
  }
  throw new Error(`rendition of ${videoId} did not settle: ${JSON.stringify(v?.rendition)}`);
}

/** A small SRT/WebVTT reader: cues as {start, end, text} in seconds, strict about the timestamp shape. */
export function parseCues(doc: string, kind: "srt" | "vtt"): { start: number; end: number; text: string }[] {
  const sep = kind === "srt" ? "," : "\\.";
  const ts = new RegExp(`^(\\d{2}):(\\d{2}):(\\d{2})${sep}(\\d{3}) --> (\\d{2}):(\\d{2}):(\\d{2})${sep}(\\d{3})$`);
  let body = doc.replace(/\r\n/g, "\n");
  if (kind === "vtt") {
    if (!/^WEBVTT(\n|$)/.test(body)) throw new Error("no WEBVTT header");
    body = body.replace(/^WEBVTT\n/, "");
  }
  const blocks = body
    .split(/\n\n+/)
    .map((b) => b.trim())
    .filter(Boolean);
  return blocks.map((b, i) => {
    const lines = b.split("\n");
    if (kind === "srt" && lines.shift() !== String(i + 1)) throw new Error(`cue ${i + 1} is misnumbered`);
    const m = ts.exec(lines.shift() ?? "");
    if (!m) throw new Error(`cue ${i + 1} has a malformed timing line`);
    const n = m.slice(1).map(Number);
    return {
      start: n[0]! * 3600 + n[1]! * 60 + n[2]! + n[3]! / 1000,
      end: n[4]! * 3600 + n[5]! * 60 + n[6]! + n[7]! / 1000,
      text: lines.join("\n"),
    };
  });
}

/** stack-findings "Headless Chromium for browser tests": without these it calls Google's hosts at start. */
export const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--autoplay-policy=no-user-gesture-required",
];

/** A blank page the test server answers itself, so the video is same-origin and its pixels readable. */
export const PLAYER_PAGE = "/__playback-test.html";

/** Runs in the page: load, seek to 1 s, draw the frame, count pixels that are not black. */
export async function frameIn(
  src: string,
): Promise<{ error: string | null; videoWidth: number; videoHeight: number; nonBlack: number; currentTime: number }> {
  const video = document.createElement("video");
  video.muted = true;
  video.preload = "auto";
  document.body.appendChild(video);
  const once = (ev: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${ev} in 20 s`)), 20_000);
      video.addEventListener(ev, () => (clearTimeout(timer), resolve()), { once: true });
      video.addEventListener(
        "error",
        () => (clearTimeout(timer), reject(new Error(`MediaError ${video.error?.code}: ${video.error?.message}`))),
        { once: true },
      );
    });
  try {
    const loaded = once("loadeddata"); // listeners before src: a cached file may fire at once
    video.src = src;
    await loaded;
    const seeked = once("seeked");
    video.currentTime = 1;
    await seeked;
    if (!video.videoWidth) throw new Error("no picture (videoWidth 0: sound only)");
    const canvas = document.createElement("canvas");
    canvas.width = video.videoWidth;
    canvas.height = video.videoHeight;
    const ctx = canvas.getContext("2d")!;
    ctx.drawImage(video, 0, 0);
    const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let nonBlack = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i]! + px[i + 1]! + px[i + 2]! > 60) nonBlack++;
    return {
      error: null,
      videoWidth: video.videoWidth,
      videoHeight: video.videoHeight,
      nonBlack,
      currentTime: video.currentTime,
    };
  } catch (e) {
    return {
      error: (e as Error).message,
      videoWidth: video.videoWidth,
      videoHeight: video.videoHeight,
      nonBlack: 0,
      currentTime: video.currentTime,
    };
  }
}
