/**
 * The media object-store seam (issue 26, src/media/object-store.ts): the same checks against a
 * folder (the media root) and against an S3-compatible server through Bun's built-in S3 client.
 * The S3 server is s3rver (npm; test/helpers/s3.ts: run by `node` on loopback and a free port). It
 * does not check request signatures, so this proves the client's requests and answers, not S3's
 * authentication.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FsObjectStore, type ObjectStore } from "../../src/media/object-store.ts";
import { type S3Server, startS3 } from "../helpers/s3.ts";
import { tempDir } from "../helpers/temp.ts";

async function bytesOf(stream: ReadableStream<Uint8Array> | null): Promise<Uint8Array> {
  expect(stream).not.toBeNull();
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function conformance(name: string, make: () => ObjectStore) {
  describe(name, () => {
    const scratch = tempDir("vsearch-objects-scratch-");
    const source = join(scratch, "source.mp4");
    const bytes = randomBytes(300_000);
    writeFileSync(source, bytes);

    test("put, stat, read whole and by range, fetch to local scratch", async () => {
      const s = make();
      await s.put("videos/vid_a/source.mp4", source);
      expect(await s.stat("videos/vid_a/source.mp4")).toEqual({ size: bytes.length });
      expect(Buffer.from(await bytesOf(await s.read("videos/vid_a/source.mp4"))).equals(bytes)).toBe(true);
      const part = await bytesOf(await s.read("videos/vid_a/source.mp4", { start: 1000, end: 1999 }));
      expect(Buffer.from(part).equals(bytes.subarray(1000, 2000))).toBe(true);
      const local = join(scratch, "work", "copy.mp4");
      expect(await s.fetchTo("videos/vid_a/source.mp4", local)).toBe(true);
      expect(readFileSync(local).equals(bytes)).toBe(true);
      // Replaced whole.
      writeFileSync(join(scratch, "small"), "tiny");
      await s.put("videos/vid_a/source.mp4", join(scratch, "small"));
      expect(await s.stat("videos/vid_a/source.mp4")).toEqual({ size: 4 });
    });

    test("a missing object is null / false, never an error", async () => {
      const s = make();
      expect(await s.stat("videos/vid_none/source.mp4")).toBeNull();
      expect(await s.read("videos/vid_none/source.mp4")).toBeNull();
      expect(await s.fetchTo("videos/vid_none/source.mp4", join(scratch, "none"))).toBe(false);
      expect(existsSync(join(scratch, "none"))).toBe(false);
      await s.delete("videos/vid_none/source.mp4");
    });

    test("list and delete a video's folder, leaving its neighbour with a similar name", async () => {
      const s = make();
      for (const k of [
        "videos/vid_b/source.mp4",
        "videos/vid_b/shots/0.jpg",
        "videos/vid_b/shots/1.jpg",
        "videos/vid_bb/source.mp4",
      ])
        await s.put(k, source);
      expect(await s.list("videos/vid_b/")).toEqual([
        "videos/vid_b/shots/0.jpg",
        "videos/vid_b/shots/1.jpg",
        "videos/vid_b/source.mp4",
      ]);
      expect(await s.deletePrefix("videos/vid_b/")).toBe(3);
      expect(await s.list("videos/vid_b/")).toEqual([]);
      expect(await s.stat("videos/vid_bb/source.mp4")).toEqual({ size: bytes.length });
    });

    test("keys that could leave the root or mean two things are refused", async () => {
      const s = make();
      for (const bad of ["", "../secret.key", "/etc/passwd", "videos//x", "videos/./x", "videos\\x", "a\nb"])
        await expect(s.put(bad, source), bad).rejects.toThrow(/not a media object key/);
      expect(() => s.presign("videos/../x", 60)).toThrow(/not a media object key/);
    });

    test("playback: a presigned URL of the store, or none (the server proxies it)", async () => {
      const s = make();
      await s.put("videos/vid_c/web.mp4", source);
      const url = s.presign("videos/vid_c/web.mp4", 300);
      if (s.kind === "filesystem") return expect(url).toBeNull();
      expect(url).toMatch(/X-Amz-Signature=[0-9a-f]{64}/);
      expect(url).toMatch(/X-Amz-Expires=300/);
      const res = await fetch(url!, { headers: { range: "bytes=0-99" } });
      expect(res.status).toBe(206);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes.subarray(0, 100))).toBe(true);
    });
  });
}

const fsRoot = tempDir("vsearch-objects-root-");
conformance("a folder (the media root)", () => new FsObjectStore(fsRoot));

describe("an S3-compatible server (s3rver)", () => {
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startS3("vsearch-media");
  }, 60_000);
  afterAll(async () => {
    await s3?.stop();
  });
  conformance("S3ObjectStore", () => s3.objects("install-1"));
});
