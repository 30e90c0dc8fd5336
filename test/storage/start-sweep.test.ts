/**
 * The start-up sweep (VideoFiles.sweepOrphans): temp files are never resumable, so a starting node
 * removes them — except in the folders of videos another node is indexing right now (their tasks
 * run: app start passes them), whose temp files are being written. Without that, a second server
 * starting beside a running job deleted the first's frame output (test/jobs/two-nodes.test.ts
 * failed with DECODE_FAILED on PostgreSQL, where the timing put the decode mid-way).
 */
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { SHARED_ROOT_GRACE_MS, VideoFiles } from "../../src/videos/files.ts";
import { tempDir } from "../helpers/temp.ts";

test("temp files of a busy video's folder stay; the others' go; a folder without a row goes", async () => {
  const dir = tempDir("vsearch-sweep-");
  const files = new VideoFiles(dir);
  for (const v of ["vid_busy", "vid_idle", "vid_gone"]) {
    mkdirSync(join(dir, "videos", v), { recursive: true });
    writeFileSync(join(dir, "videos", v, "frames.tmp-123"), "x");
    writeFileSync(join(dir, "videos", v, "source.mp4"), "x");
  }
  const swept = await files.sweepOrphans(new Set(["vid_busy", "vid_idle"]), new Set(["vid_busy"]));
  expect(existsSync(join(dir, "videos", "vid_busy", "frames.tmp-123"))).toBe(true);
  expect(existsSync(join(dir, "videos", "vid_idle", "frames.tmp-123"))).toBe(false);
  expect(existsSync(join(dir, "videos", "vid_idle", "source.mp4"))).toBe(true);
  expect(existsSync(join(dir, "videos", "vid_gone"))).toBe(false);
  expect(swept).toEqual({ tmp: 2, videos: 1, left_to_owners: 0 });
});

test("on a shared media root: this node's temp uploads go at once, another node's only once untouched for the grace", async () => {
  const root = tempDir("vsearch-sweep-shared-");
  const files = new VideoFiles(root, "node_aaaaaaaaaaaaaaaa");
  const other = new VideoFiles(root, "node_bbbbbbbbbbbbbbbb");
  const mine = files.tempPath("part");
  const theirsLive = other.tempPath("part");
  const theirsDead = other.tempPath("part");
  for (const f of [mine, theirsLive, theirsDead]) writeFileSync(f, "x");
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  utimesSync(theirsDead, twoHoursAgo, twoHoursAgo);
  const swept = await files.sweepOrphans(new Set(), new Set(), { sharedGraceMs: SHARED_ROOT_GRACE_MS });
  expect([existsSync(mine), existsSync(theirsLive), existsSync(theirsDead)]).toEqual([false, true, false]);
  expect(swept).toEqual({ tmp: 2, videos: 0, left_to_owners: 1 });
  // Unshared (the embedded store: one node per media root), everything a crash left goes.
  expect(await other.sweepOrphans(new Set(), new Set())).toEqual({ tmp: 1, videos: 0, left_to_owners: 0 });
});

test("a folder without a row stays while an upload claims it or once its row is there; a crash's leftover goes", async () => {
  const root = tempDir("vsearch-sweep-claims-");
  const files = new VideoFiles(root, "node_aaaaaaaaaaaaaaaa");
  const other = new VideoFiles(root, "node_bbbbbbbbbbbbbbbb");
  const claim = other.claimIncoming("vid_coming"); // another node moves an upload in; its row commits next
  for (const v of ["vid_coming", "vid_committed", "vid_left"]) {
    files.ensureDir(v);
    writeFileSync(join(root, "videos", v, "source.mp4"), "x");
  }
  files.claimIncoming("vid_minecrashed"); // this node's previous process died holding a claim
  files.ensureDir("vid_minecrashed");
  const rows = new Set(["vid_committed"]); // committed after the sweep read the known ids
  const swept = await files.sweepOrphans(new Set(), new Set(), {
    sharedGraceMs: SHARED_ROOT_GRACE_MS,
    hasRow: async (id) => rows.has(id),
  });
  expect(readdirSync(join(root, "videos")).sort()).toEqual(["vid_coming", "vid_committed"]);
  expect(existsSync(claim)).toBe(true);
  expect(swept).toEqual({ tmp: 1, videos: 2, left_to_owners: 3 });
  other.releaseIncoming(claim);
  expect(
    await files.sweepOrphans(new Set(["vid_committed"]), new Set(), { sharedGraceMs: SHARED_ROOT_GRACE_MS }),
  ).toEqual({
    tmp: 0,
    videos: 1,
    left_to_owners: 0,
  });
});
