/**
 * The start-up sweep (VideoFiles.sweepOrphans): temp files are never resumable, so a starting node
 * removes them — except in the folders of videos another node is indexing right now (their tasks
 * run: app start passes them), whose temp files are being written. Without that, a second server
 * starting beside a running job deleted the first's frame output (test/jobs/two-nodes.test.ts
 * failed with DECODE_FAILED on PostgreSQL, where the timing put the decode mid-way).
 */
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { SHARED_ROOT_GRACE_MS, VideoFiles } from "../../src/videos/files.ts";
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
  expect(swept).toEqual({ tmp: 2, videos: 1, left_to_owners: 0 });
});

test("on a shared media root: this node's temp uploads go at once; another node's, and a folder whose row may be coming, only once untouched for the grace", () => {
  const root = tempDir("vsearch-sweep-shared-");
  const files = new VideoFiles(root, "node_aaaaaaaaaaaaaaaa");
  const other = new VideoFiles(root, "node_bbbbbbbbbbbbbbbb");
  const mine = files.tempPath("part");
  const theirsLive = other.tempPath("part");
  const theirsDead = other.tempPath("part");
  for (const f of [mine, theirsLive, theirsDead]) writeFileSync(f, "x");
  const hoursAgo = (p: string) =>
    utimesSync(p, new Date(Date.now() - 2 * 3600_000), new Date(Date.now() - 2 * 3600_000));
  hoursAgo(theirsDead);
  // A folder another node just moved an upload into (its row is being committed), and a crash's leftover.
  for (const v of ["vid_coming", "vid_left"]) {
    mkdirSync(join(root, "videos", v, "shots"), { recursive: true });
    writeFileSync(join(root, "videos", v, "source.mp4"), "x");
  }
  for (const p of ["videos/vid_left/source.mp4", "videos/vid_left/shots", "videos/vid_left"]) hoursAgo(join(root, p));
  const swept = files.sweepOrphans(new Set(), new Set(), { sharedGraceMs: SHARED_ROOT_GRACE_MS });
  expect([existsSync(mine), existsSync(theirsLive), existsSync(theirsDead)]).toEqual([false, true, false]);
  expect(existsSync(join(root, "videos", "vid_coming", "source.mp4"))).toBe(true);
  expect(existsSync(join(root, "videos", "vid_left"))).toBe(false);
  expect(swept).toEqual({ tmp: 2, videos: 1, left_to_owners: 2 });
  // Unshared (the embedded store: one node per media root), everything a crash left goes.
  expect(other.sweepOrphans(new Set(), new Set())).toEqual({ tmp: 1, videos: 1, left_to_owners: 0 });
});
