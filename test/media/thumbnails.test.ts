import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writePoster, writeThumbnail, writeThumbnails } from "../../src/media/thumbnails.ts";
import { CUTS, imageDimensions as dimensions, isJpeg, mediaBins, mediaFixture, meanRgb } from "../helpers/media.ts";
import { tempDir } from "../helpers/temp.ts";

const bins = mediaBins();
const dir = tempDir("vsearch-thumbs-");

function expectJpeg(path: string) {
  const b = readFileSync(path);
  expect(isJpeg(b)).toBe(true);
  return b.length;
}

async function meanColour(path: string): Promise<[number, number, number]> {
  const p = Bun.spawn(
    [bins.ffmpeg, "-v", "error", "-i", path, "-vf", "scale=16:16", "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"],
    { stdout: "pipe" },
  );
  return meanRgb(new Uint8Array(await new Response(p.stdout).arrayBuffer()));
}

describe("writeThumbnail", () => {
  it("writes a 320-wide JPEG of the frame at the given time, and no temp files", async () => {
    const out = join(dir, "red.jpg");
    await writeThumbnail(bins, await mediaFixture("cuts"), 2.8, out); // red segment 2.0–3.6
    expectJpeg(out);
    expect(await dimensions(out)).toEqual([320, 240]);
    const [r, g, b] = await meanColour(out);
    expect(r).toBeGreaterThan(200);
    expect(g + b).toBeLessThan(60);
    expect(readdirSync(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });

  it("seeks exactly: one frame after a cut shows the new shot", async () => {
    const out = join(dir, "blue.jpg");
    await writeThumbnail(bins, await mediaFixture("cuts"), 5.6, out); // first blue frame
    const [r, , b] = await meanColour(out);
    expect(b).toBeGreaterThan(200);
    expect(r).toBeLessThan(40);
  });

  it("keeps the display shape of rotated and anamorphic video; width and quality are options", async () => {
    const rot = join(dir, "rot.jpg");
    await writeThumbnail(bins, await mediaFixture("rotated"), 0.5, rot, { width: 160 });
    expect(await dimensions(rot)).toEqual([160, 320]);
    const ana = join(dir, "ana.jpg");
    await writeThumbnail(bins, await mediaFixture("anamorphic"), 0.2, ana);
    expect(await dimensions(ana)).toEqual([320, 240]);
    const hi = join(dir, "hi.jpg");
    const lo = join(dir, "lo.jpg");
    const cuts = await mediaFixture("cuts");
    await writeThumbnail(bins, cuts, 0.5, hi, { quality: 95 });
    await writeThumbnail(bins, cuts, 0.5, lo, { quality: 5 });
    expect(expectJpeg(lo)).toBeLessThan(expectJpeg(hi));
  });

  it("past the end, gives the last frame instead of nothing", async () => {
    const out = join(dir, "end.jpg");
    await writeThumbnail(bins, await mediaFixture("static"), 60, out); // ends on green
    expectJpeg(out);
    const [r, g, b] = await meanColour(out);
    expect(g).toBeGreaterThan(r + 50);
    expect(g).toBeGreaterThan(b + 50);
  });

  it("overwrites an existing thumbnail in one step", async () => {
    const out = join(dir, "again.jpg");
    const cuts = await mediaFixture("cuts");
    await writeThumbnail(bins, cuts, 2.8, out);
    await writeThumbnail(bins, cuts, 6.0, out); // blue
    const [, , b] = await meanColour(out);
    expect(b).toBeGreaterThan(200);
  });

  it("fails with NO_VIDEO_STREAM / DECODE_FAILED and leaves nothing behind", async () => {
    const out = join(dir, "bad.jpg");
    await expect(writeThumbnail(bins, await mediaFixture("audioM4a"), 1, out)).rejects.toMatchObject({
      code: "NO_VIDEO_STREAM",
    });
    await expect(writeThumbnail(bins, await mediaFixture("truncated"), 1, out)).rejects.toMatchObject({
      code: "DECODE_FAILED",
    });
    expect(readdirSync(dir).filter((f) => f.startsWith("bad.jpg"))).toEqual([]);
  });
});

describe("writeThumbnails", () => {
  it("writes one JPEG per shot in batched ffmpeg runs, each of the right shot", async () => {
    const file = await mediaFixture("cuts");
    const mids = [0, ...CUTS.boundaries].map((s, i, all) => (s + (all[i + 1] ?? CUTS.durationSecs)) / 2);
    const reqs = mids.map((t, i) => ({ timestampSecs: t, outPath: join(dir, `shot-${i}.jpg`) }));
    await writeThumbnails(bins, file, reqs, { batchSize: 2 });
    for (const r of reqs) {
      expectJpeg(r.outPath);
      expect(await dimensions(r.outPath)).toEqual([320, 240]);
    }
    const [red, blue] = [await meanColour(reqs[1].outPath), await meanColour(reqs[3].outPath)];
    expect(red[0]).toBeGreaterThan(200);
    expect(blue[2]).toBeGreaterThan(200);
    // Same pixels as one-at-a-time.
    const single = join(dir, "single-3.jpg");
    await writeThumbnail(bins, file, mids[3], single);
    expect(readFileSync(single).equals(readFileSync(reqs[3].outPath))).toBe(true);
  });
});

describe("writePoster", () => {
  it("writes a 640-wide poster JPEG", async () => {
    const out = join(dir, "poster.jpg");
    await writePoster(bins, await mediaFixture("cuts"), out, { durationSecs: CUTS.durationSecs });
    expectJpeg(out);
    expect(await dimensions(out)).toEqual([640, 480]);
  });

  it("tone-maps an HDR poster when asked", async () => {
    const plain = join(dir, "hdr-plain.jpg");
    const mapped = join(dir, "hdr-mapped.jpg");
    const file = await mediaFixture("hdr");
    await writePoster(bins, file, plain, { width: 320 });
    await writePoster(bins, file, mapped, { width: 320, hdr: true });
    expect(await dimensions(mapped)).toEqual([320, 180]);
    const [a, b] = [await meanColour(plain), await meanColour(mapped)];
    expect(Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) + Math.abs(a[2] - b[2])).toBeGreaterThan(10);
  });
});
