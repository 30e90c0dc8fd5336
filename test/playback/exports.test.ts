import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { probeMedia } from "../../src/media/index.ts";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { FFMPEG, scratchDir } from "../helpers/ffmpeg.ts";
import { mediaBins } from "../helpers/media.ts";
import { fixedCatalog, tinyWhisper } from "../helpers/models.ts";
import { collection, makeFormat, parseCues, uploadAndIndex } from "./helpers.ts";

const media = scratchDir("exports");
/** ffmpeg behind a wrapper that logs each run's arguments: how many times a clip was encoded. */
const ffmpegLog = join(media, "ffmpeg-runs.log");
function countingFfmpeg(): string {
  const script = join(media, "ffmpeg-counting.sh");
  // One line when a run starts and one when it ends, so overlapping runs can be counted.
  writeFileSync(
    script,
    `#!/bin/sh\necho "start $*" >> '${ffmpegLog}'\n'${FFMPEG}' "$@"\nrc=$?\necho "end $*" >> '${ffmpegLog}'\nexit $rc\n`,
  );
  chmodSync(script, 0o755);
  writeFileSync(ffmpegLog, "");
  return script;
}
const clipEncodes = (file: string) =>
  readFileSync(ffmpegLog, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("start ") && l.includes(`/clips/${file}.`)).length;
/** The most clip encodes that ran at the same time, from the wrapper's start/end lines. */
function peakClipEncodes(): number {
  let now = 0;
  let peak = 0;
  for (const l of readFileSync(ffmpegLog, "utf8").split("\n")) {
    if (!l.includes("/clips/")) continue;
    now += l.startsWith("start ") ? 1 : -1;
    peak = Math.max(peak, now);
  }
  return peak;
}
const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

describe("clip and transcript export", () => {
  let t: TestApp;
  let a: Tenant;
  let b: Tenant;
  let video: string;
  let silent: string;
  beforeAll(async () => {
    const [mp4, ts] = await Promise.all([makeFormat(media, "h264-mp4"), makeFormat(media, "mpeg2-ts")]);
    // With a speech model the transcript stage runs (the tiny random Whisper writes no segments on a tone).
    t = await startTestApp(
      {
        VSEARCH_RATE_LIMIT_VIDEOS: "100000",
        VSEARCH_RATE_LIMIT_JOBS: "100000",
        VSEARCH_CLIP_MAX_SECS: "1.5",
        VSEARCH_CLIP_CACHE_MB: "0",
        VSEARCH_FFMPEG_PATH: countingFfmpeg(),
      },
      { models: fixedCatalog({ speech: tinyWhisper }) },
    );
    await t.app.start();
    [a, b] = [await createTenant(t, "A"), await createTenant(t, "B")];
    const col = await collection(t, a);
    video = await uploadAndIndex(t, a, col, ts);
    silent = await uploadAndIndex(t, a, col, mp4);
  });
  afterAll(() => t.close());

  const clip = (tenant: Tenant, id: string, q: string) =>
    t.request("GET", `/v1/videos/${id}/clip?${q}`, { token: tenant.readOnlyKey });

  test("a clip is an H.264/AAC MP4 of exactly that span, behind a presigned URL", async () => {
    const res = await clip(a, video, "start=0.4&end=1.6");
    expect(res.status).toBe(200);
    const { data } = await json(res);
    expect(data).toMatchObject({ start: 0.4, end: 1.6 });
    expect(data.url).toContain(`/media/videos/${video}/clips/400-1600.mp4?expires=`);
    expect(Date.parse(data.expires_at)).toBeGreaterThan(Date.now());
    const file = await t.request("GET", pathOf(data.url));
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("video/mp4");
    const path = join(t.dir, "videos", video, "clips", "400-1600.mp4");
    const info = await probeMedia(mediaBins(), path);
    expect(info).toMatchObject({ container: "mp4", videoCodec: "h264", audioCodec: "aac", width: 320, height: 240 });
    expect(info.durationSecs!).toBeGreaterThan(1.15);
    expect(info.durationSecs!).toBeLessThan(1.3);
    const ranged = await t.request("GET", pathOf(data.url), { headers: { range: "bytes=10-19" } });
    expect(ranged.status).toBe(206);
    // Without its signature the file is not served.
    expect((await t.request("GET", new URL(data.url).pathname)).status).toBe(403);
  });

  test("identical requests at once share one encode; a cached clip is answered again", async () => {
    const [r1, r2, r3] = await Promise.all([
      clip(a, video, "start=0&end=1"),
      clip(a, video, "start=0&end=1"),
      clip(a, video, "start=0.0&end=1.000"),
    ]);
    const urls = await Promise.all([r1, r2, r3].map(async (r) => (await json(r)).data.url as string));
    expect(new Set(urls.map((u) => new URL(u).pathname)).size).toBe(1);
    const dir = join(t.dir, "videos", video, "clips");
    expect(readdirSync(dir).filter((f) => f.startsWith("0-1000"))).toEqual(["0-1000.mp4"]); // no second temp file
    expect(clipEncodes("0-1000.mp4")).toBe(1);
    const again = await clip(a, video, "start=0&end=1");
    expect(again.status).toBe(200);
    expect(clipEncodes("0-1000.mp4")).toBe(1); // served from the cache
  });

  // Which of five requests sent at once reaches the export queue fifth depends on the backend (on
  // PostgreSQL each passes its key and video look-ups over a socket first, and they arrive in any
  // order): the one refused is whichever came fifth, and it alone is not encoded.
  test("different spans requested at once are encoded at most two at a time; an account's fifth waiting one is 429 with Retry-After", async () => {
    const spans = ["0.1&end=0.6", "0.2&end=0.7", "0.3&end=0.8", "0.4&end=0.9", "0.5&end=1.1"];
    const files = ["100-600.mp4", "200-700.mp4", "300-800.mp4", "400-900.mp4", "500-1100.mp4"];
    const before = files.map(clipEncodes);
    const answers = await Promise.all(spans.map((q) => clip(a, video, `start=${q}`)));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 429]);
    const refused = answers.findIndex((r) => r.status === 429);
    expect(answers[refused].headers.get("retry-after")).toBe("2");
    expect((await json(answers[refused])).detail.code).toBe("RATE_LIMIT_EXCEEDED");
    // Each span answered was encoded once (or came from the cache an earlier test left); the refused one not at all.
    files.forEach((f, i) => expect(clipEncodes(f) - before[i]).toBe(i === refused || before[i] > 0 ? 0 : 1));
    expect(peakClipEncodes()).toBe(2);
  });

  test("the cache stays within clip_cache_mb: older clips are evicted, the newest kept", async () => {
    // VSEARCH_CLIP_CACHE_MB=0: each new clip evicts every other one.
    expect((await clip(a, video, "start=0.5&end=1")).status).toBe(200);
    expect((await clip(a, video, "start=1&end=2")).status).toBe(200);
    const dir = join(t.dir, "videos", video, "clips");
    expect(readdirSync(dir)).toEqual(["1000-2000.mp4"]);
  });

  test("bad spans are 422 in the detail[] shape and write nothing", async () => {
    const before = readdirSync(join(t.dir, "videos", video, "clips")).sort();
    for (const [q, field] of [
      ["start=1&end=1", "end"],
      ["start=1.2&end=0.8", "end"],
      ["start=-1&end=1", "start"],
      ["start=0&end=9", "end"],
      ["start=5&end=6", "start"],
      ["start=0&end=1.6", "end"], // longer than clip_max_secs (1.5)
      ["start=abc&end=1", "start"],
      ["end=1", "start"],
      ["start=&end=1", "start"], // empty is missing, not 0
      ["start=0&end=%20", "end"],
    ] as const) {
      const res = await clip(a, video, q);
      expect(res.status, q).toBe(422);
      const body = await json(res);
      expect(body.detail[0].loc, q).toEqual(["query", field]);
    }
    expect(readdirSync(join(t.dir, "videos", video, "clips")).sort()).toEqual(before);
  });

  test("another account's video is 404 for both exports; no credential is 401", async () => {
    expect((await clip(b, video, "start=0&end=1")).status).toBe(404);
    const tr = await t.request("GET", `/v1/videos/${video}/transcript?format=srt`, { token: b.key });
    expect(tr.status).toBe(404);
    expect((await json(tr)).detail.code).toBe("VIDEO_NOT_FOUND");
    expect((await t.request("GET", `/v1/videos/${video}/transcript`)).status).toBe(401);
    expect((await t.request("GET", `/v1/videos/${video}/transcript?format=docx`, { token: a.key })).status).toBe(422);
  });

  // The tiny random Whisper writes no segments on generated audio (tone or noise), and new tests may
  // not write index rows themselves, so the cue formatting with text is proven on the pure
  // formatters (transcript-format.test.ts); here: the three formats agree and parse, over HTTP.
  test("the transcript as JSON, SRT and WebVTT agree and parse", async () => {
    const js = await t.request("GET", `/v1/videos/${video}/transcript?format=json`, { token: a.readOnlyKey });
    expect(js.status).toBe(200);
    const { data } = await json(js);
    expect(data.video_id).toBe(video);
    expect(Array.isArray(data.segments)).toBe(true);
    const expected = data.segments
      .filter((s: any) => s.text.replace(/\s+/g, " ").trim() !== "")
      .map((s: any) => ({
        start: s.start,
        end: Math.max(s.start, s.end),
        text: s.text.replace(/\s+/g, " ").replace(/-->/g, "->").trim(),
      }));

    const srt = await t.request("GET", `/v1/videos/${video}/transcript?format=srt`, { token: a.key });
    expect(srt.headers.get("content-type")).toContain("application/x-subrip");
    expect(srt.headers.get("content-disposition")).toBe(`attachment; filename="${video}.srt"`);
    expect(parseCues(await srt.text(), "srt")).toEqual(expected);

    const vtt = await t.request("GET", `/v1/videos/${video}/transcript?format=vtt`, { token: a.key });
    expect(vtt.headers.get("content-type")).toContain("text/vtt");
    expect(parseCues(await vtt.text(), "vtt")).toEqual(expected);
  });

  test("a video with no transcript gives valid empty documents", async () => {
    // The H.264 control has a tone; its transcript may hold cues. A video without audio has none.
    const noAudio = await uploadAndIndex(t, a, await collection(t, a, "silent"), await makeSilent());
    const js = (await json(await t.request("GET", `/v1/videos/${noAudio}/transcript`, { token: a.key }))).data;
    expect(js).toEqual({ video_id: noAudio, segments: [] });
    const srt = await (await t.request("GET", `/v1/videos/${noAudio}/transcript?format=srt`, { token: a.key })).text();
    expect(parseCues(srt, "srt")).toEqual([]);
    const vtt = await (await t.request("GET", `/v1/videos/${noAudio}/transcript?format=vtt`, { token: a.key })).text();
    expect(vtt).toBe("WEBVTT\n");
    expect(silent).toMatch(/^vid_/);
  });

  test("the OpenAPI document lists both exports, the rendition route and the video's rendition fields", async () => {
    const doc = await json(await t.request("GET", "/v1/openapi.json"));
    expect(doc.paths["/v1/videos/{video_id}/clip"].get.operationId).toBe("exportClip");
    expect(doc.paths["/v1/videos/{video_id}/transcript"].get.operationId).toBe("exportTranscript");
    expect(Object.keys(doc.paths["/v1/videos/{video_id}/clip"].get.responses)).toEqual(
      expect.arrayContaining(["200", "404", "409", "422", "429"]),
    );
    expect(JSON.stringify(doc.components.schemas.VideoDetail)).toContain("has_web_rendition");
    expect(doc.paths["/media/videos/{video_id}/web.mp4"]).toBeDefined();
    expect(existsSync(join(t.dir, "videos", video))).toBe(true);
  });
});

describe("clip of a video that is not indexed yet", () => {
  test("409 VIDEO_NOT_READY (its duration is not known before the probe)", async () => {
    const t = await startTestApp(); // not started: the upload stays queued
    try {
      const a = await createTenant(t);
      const fd = new FormData();
      fd.append("collection_id", await collection(t, a));
      fd.append("file", Bun.file(await makeFormat(media, "h264-mp4")), "q.mp4");
      const { data } = await json(await t.request("POST", "/v1/upload", { token: a.key, body: fd }));
      const res = await t.request("GET", `/v1/videos/${data.video_id}/clip?start=0&end=1`, { token: a.key });
      expect(res.status).toBe(409);
      expect((await json(res)).detail.code).toBe("VIDEO_NOT_READY");
      const v = (await json(await t.request("GET", `/v1/videos/${data.video_id}`, { token: a.key }))).data;
      expect(v).toMatchObject({ status: "queued", has_web_rendition: false, rendition: null });
    } finally {
      await t.close();
    }
  });
});

async function makeSilent(): Promise<string> {
  const { ffmpeg } = await import("../helpers/ffmpeg.ts");
  return ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=160x120:rate=10:duration=2",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "silent.mp4"),
  );
}
