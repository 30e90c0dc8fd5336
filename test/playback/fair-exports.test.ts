import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createKeyTenant, json, type Tenant } from "../helpers/app.ts";
import { ffmpeg, scratchDir, toolProcesses } from "../helpers/ffmpeg.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { until } from "../helpers/wait.ts";
import { collection, uploadAndIndex } from "./helpers.ts";

/**
 * Issue 21: clip encodes are shared fairly and stop when nobody wants them. Account A floods 40
 * distinct spans: 4 are taken (2 encode, 2 wait), 36 are 429 with Retry-After at once; account
 * B's 1 s clip takes the first free slot — ahead of A's waiting ones — so it waits for at most one
 * of A's encodes. A client that leaves stops its encode (unless another request waits for the same
 * span); deleting the video stops its encodes. Through real HTTP on a real socket.
 */
let s: TestServer;
let a: Tenant;
let b: Tenant;
let videoA: string;
let videoB: string;
const media = scratchDir("fair-exports");

beforeAll(async () => {
  s = await startTestServer({
    VSEARCH_RATE_LIMIT_VIDEOS: "100000",
    VSEARCH_RATE_LIMIT_JOBS: "100000",
    VSEARCH_RATE_LIMIT_UPLOAD: "1000",
    VSEARCH_CLIP_CACHE_MB: "1024",
  });
  await s.app.start();
  a = await createKeyTenant(s, "A");
  b = await createKeyTenant(s, "B");
  const src = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=320x240:rate=25:duration=60",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "50",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "long.mp4"),
  );
  videoA = await uploadAndIndex(s, a, await collection(s, a), src);
  videoB = await uploadAndIndex(s, b, await collection(s, b), src);
}, 240_000);
afterAll(() => s.close());

const clip = (t: Tenant, id: string, start: number, end: number, signal?: AbortSignal) =>
  s.http(`/v1/videos/${id}/clip?start=${start}&end=${end}`, { token: t.readOnlyKey, signal });
/** The ffmpeg encoding this span of this video right now (its temp file is `clips/<ms>-<ms>.mp4.<pid>.tmp`). */
const encoding = (id: string, start: number, end: number) =>
  toolProcesses(join(s.dir, "videos", id, "clips", `${start * 1000}-${end * 1000}.mp4.`)).filter(
    (p) => p.name === "ffmpeg",
  );

describe("fair clip exports", () => {
  test("A floods 40 spans: 4 taken, 36 refused with Retry-After; B's 1 s clip goes ahead of A's waiting two", async () => {
    const finished: string[] = [];
    const statuses: number[] = [];
    const flood = Array.from({ length: 40 }, async (_, i) => {
      const res = await clip(a, videoA, i, i + 8);
      statuses.push(res.status);
      if (res.status === 200) finished.push(`A ${i}`);
      else {
        expect(res.status).toBe(429);
        expect(res.headers.get("retry-after")).toBe("2");
        expect((await json(res)).detail.code).toBe("RATE_LIMIT_EXCEEDED");
      }
      return res.status;
    });
    // The refusals come back at once, before any encode ends.
    expect(await until(async () => statuses.length >= 36, 60_000)).toBe(true);
    expect(statuses.filter((x) => x === 429)).toHaveLength(36);
    expect(finished).toEqual([]);
    const mine = clip(b, videoB, 0, 1).then((r) => {
      finished.push("B");
      return r;
    });
    expect((await Promise.all(flood)).filter((x) => x === 200)).toHaveLength(4);
    expect((await mine).status).toBe(200);
    // B took the first free slot, ahead of A's two waiting spans (queued before it): at least two
    // of A's four finished after B. With one shared FIFO B would have finished last.
    const afterB = finished.slice(finished.indexOf("B") + 1);
    expect(afterB.length, finished.join(", ")).toBeGreaterThanOrEqual(2);
  }, 240_000);

  test("a client that leaves stops its encode: the ffmpeg is killed, no clip or temp file is left", async () => {
    const leave = new AbortController();
    const res = clip(a, videoA, 40, 50, leave.signal).catch((e: Error) => e);
    expect(await until(async () => encoding(videoA, 40, 50).length === 1, 60_000)).toBe(true);
    leave.abort();
    expect(await res).toBeInstanceOf(Error);
    expect(await until(async () => encoding(videoA, 40, 50).length === 0, 10_000)).toBe(true);
    const clips = join(s.dir, "videos", videoA, "clips");
    expect(await until(async () => !readdirSync(clips).some((f) => f.startsWith("40000-50000")), 5000)).toBe(true);
    // Asked again, it is encoded again (and answered).
    expect((await clip(a, videoA, 40, 50)).status).toBe(200);
  }, 120_000);

  test("unless another request waits for the same span: that one still gets its clip, from the same encode", async () => {
    const leave = new AbortController();
    const first = clip(a, videoA, 50, 58, leave.signal).catch((e: Error) => e);
    expect(await until(async () => encoding(videoA, 50, 58).length === 1, 60_000)).toBe(true);
    const second = clip(a, videoA, 50, 58);
    await Bun.sleep(100); // the second request has joined the encode
    leave.abort();
    expect(await first).toBeInstanceOf(Error);
    const seen = new Set<number>();
    let done = false;
    const answer = second.finally(() => (done = true));
    while (!done) {
      for (const p of encoding(videoA, 50, 58)) seen.add(p.pid);
      await Bun.sleep(20);
    }
    expect((await answer).status).toBe(200);
    expect(seen.size).toBe(1); // never stopped and started again
    expect(existsSync(join(s.dir, "videos", videoA, "clips", "50000-58000.mp4"))).toBe(true);
  }, 120_000);

  test("deleting the video stops its encodes: the waiting request is answered 404, the ffmpeg killed", async () => {
    const res = clip(b, videoB, 30, 45);
    expect(await until(async () => encoding(videoB, 30, 45).length === 1, 60_000)).toBe(true);
    expect((await s.http(`/v1/videos/${videoB}`, { method: "DELETE", token: b.key })).status).toBe(204);
    const answer = await res;
    expect(answer.status).toBe(404);
    expect((await json(answer)).detail.code).toBe("VIDEO_NOT_FOUND");
    expect(await until(async () => encoding(videoB, 30, 45).length === 0, 10_000)).toBe(true);
  }, 120_000);
});
