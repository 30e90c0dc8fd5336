/**
 * The start-up sweep (VideoFiles.sweepOrphans): temp files are never resumable, so a starting node
 * removes them — except in the folders of videos another node is indexing right now (their tasks
 * run: app start passes them), whose temp files are being written. Without that, a second server
 * starting beside a running job deleted the first's frame output (test/jobs/two-nodes.test.ts
 * failed with DECODE_FAILED on PostgreSQL, where the timing put the decode mid-way).
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { VideoFiles } from "../../src/videos/files.ts";
import { tempDir } from "../helpers/temp.ts";

test("temp files of a busy video's folder stay; the others' go; a folder without a row goes", () => {
  const dir = tempDir("vsearch-sweep-");
  const files = new VideoFiles(dir);
  for (const v of ["vid_busy", "vid_idle", "vid_gone"]) {
    mkdirSync(join(dir, "videos", v), { recursive: true });
    writeFileSync(join(dir, "videos", v, "frames.tmp-123"), "x");
    writeFileSync(join(dir, "videos", v, "source.mp4"), "x");
  }
  const swept = files.sweepOrphans(new Set(["vid_busy", "vid_idle"]), new Set(["vid_busy"]));
  expect(existsSync(join(dir, "videos", "vid_busy", "frames.tmp-123"))).toBe(true);
  expect(existsSync(join(dir, "videos", "vid_idle", "frames.tmp-123"))).toBe(false);
  expect(existsSync(join(dir, "videos", "vid_idle", "source.mp4"))).toBe(true);
  expect(existsSync(join(dir, "videos", "vid_gone"))).toBe(false);
  expect(swept).toEqual({ tmp: 2, videos: 1 });
});
