import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createKeyTenant, createTenant, json, type Tenant } from "../helpers/app.ts";
import { ffmpeg, ffmpegChildren, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

/**
 * Issue 9: reference images cannot exhaust memory. A small file that decodes huge is refused from
 * its header; decodes run at most two at a time. Issue 21: they are scheduled per account — one
 * account holds at most 4 running and waiting (one more is 429 with Retry-After), so its burst
 * cannot make another account's image search wait or fail; past 16 waiting in all, 503.
 */
let s: TestServer;
let a: Tenant;
let other: Tenant;
const dir = scratchDir("security-images");
let bomb: Uint8Array<ArrayBuffer>;
let rgbaOver: Uint8Array<ArrayBuffer>;
let big: Uint8Array<ArrayBuffer>;

const png = async (name: string, src: string, extra: string[] = []) =>
  Uint8Array.from(readFileSync(await ffmpeg(["-f", "lavfi", "-i", src, "-frames:v", "1", ...extra], join(dir, name))));

beforeAll(async () => {
  s = await startTestServer(
    { VSEARCH_RATE_LIMIT_SEARCH: "1000" },
    { models: fixedCatalog({ "image-text": tinyClip }) },
  );
  a = await createTenant(s);
  other = await createKeyTenant(s, "Other");
  bomb = await png("bomb.png", "color=c=blue:size=10000x8000"); // 80 Mpx, ~250 kB
  rgbaOver = await png("rgba.png", "color=c=red:size=5200x5200", ["-pix_fmt", "rgba"]); // 27 Mpx × 4 B
  big = await png("big.png", "color=c=green:size=3000x3000"); // 9 Mpx × 3 B: allowed
});
afterAll(() => s.close());

const searchImage = (bytes: Uint8Array<ArrayBuffer>, tenant: () => Tenant = () => a) => {
  const fd = new FormData();
  fd.append("image", new Blob([bytes], { type: "image/png" }), "q.png");
  fd.append("modes", "video");
  return s.http("/v1/search", { method: "POST", token: tenant().readOnlyKey, body: fd });
};

describe("decompression bombs", () => {
  test.each([
    ["an 80-megapixel PNG of a few hundred kB", () => bomb],
    ["a 27-megapixel RGBA PNG (108 MB decoded)", () => rgbaOver],
  ])("%s: 422 image_too_large from the header, no ffmpeg started", async (_n, bytes) => {
    const t0 = performance.now();
    const res = await searchImage(bytes());
    expect(res.status).toBe(422);
    expect((await json(res)).detail[0]).toMatchObject({
      loc: ["body", "image"],
      type: "image_too_large",
      ctx: { max_pixels: expect.any(Number) },
    });
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  test("a burst of 20 large-but-allowed images from one account: at most 2 decodes at once, 4 taken, the rest 429 with Retry-After; another account's image search is answered meanwhile", async () => {
    let peak = { n: 0, rssKb: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const now = ffmpegChildren();
        if (now.n > peak.n) peak = { ...peak, n: now.n };
        if (now.rssKb > peak.rssKb) peak = { ...peak, rssKb: now.rssKb };
        await Bun.sleep(15);
      }
    })();
    const burst = Promise.all(Array.from({ length: 20 }, () => searchImage(big)));
    const theirs = await searchImage(big, () => other);
    const responses = await burst;
    sampling = false;
    await sampler;
    expect(theirs.status).toBe(200);
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((x) => x === 200)).toHaveLength(4);
    expect(statuses.filter((x) => x === 429)).toHaveLength(16);
    for (const r of responses.filter((x) => x.status === 429)) {
      expect(r.headers.get("retry-after")).toBe("1");
      expect((await json(r)).detail.code).toBe("RATE_LIMIT_EXCEEDED");
    }
    expect(peak.n).toBeGreaterThanOrEqual(1);
    expect(peak.n).toBeLessThanOrEqual(2);
    // Two 9-Mpx decodes: ~2 × 40 MB. Before: 20 in parallel, ~800 MB.
    expect(peak.rssKb).toBeLessThan(200 * 1024);
  });
});
