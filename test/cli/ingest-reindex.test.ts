import { join } from "node:path";
import { expect, test } from "vitest";
import { runCli, runCliJson } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";
import { tempDir } from "../helpers/temp.ts";

const dir = tempDir("vsearch-reindex-");

test("ingest a folder, then a new model version makes `reindex` re-embed with it", async () => {
  const media = scratchDir("reindex");
  await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=160x120:rate=10:duration=3",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "a.mp4"),
  );
  await ffmpeg(
    ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10:duration=3", "-c:v", "libvpx", "-b:v", "200k"],
    join(media, "b.webm"),
  );
  const clip = join(FIXTURE_MODELS, "tiny-random-clip");
  const first = await runCliJson([
    "--data-dir",
    dir,
    "models",
    "import",
    clip,
    "--role",
    "image-text",
    "--dtype",
    "q8",
    "--no-load-check",
  ]);
  const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "r"]);

  const ingest = await runCliJson(["--data-dir", dir, "ingest", media, "--account", acct.id, "--collection", "clips"]);
  expect(ingest.summary).toEqual({ indexed: 2 });
  expect(ingest.files.map((f: any) => f.path.split("/").pop()).sort()).toEqual(["a.mp4", "b.webm"]);

  const nothing = await runCliJson(["--data-dir", dir, "reindex"]);
  expect(nothing.requeued).toBe(0);

  const second = await runCliJson([
    "--data-dir",
    dir,
    "models",
    "import",
    clip,
    "--role",
    "image-text",
    "--dtype",
    "fp32",
    "--name",
    "tiny-clip-fp32",
    "--no-load-check",
  ]);
  expect(first.model.model_id).toMatch(/^tiny-random-clip@[0-9a-f]{12}$/);
  expect(second.model.model_id).toMatch(/^tiny-clip-fp32@[0-9a-f]{12}$/);
  const re = await runCliJson(["--data-dir", dir, "reindex"]);
  expect(re.requeued).toBe(2);
  expect(re.videos.map((v: any) => v.status)).toEqual(["indexed", "indexed"]);
  const jobs = await runCliJson(["--data-dir", dir, "jobs", "--account", acct.id]);
  expect(jobs.filter((j: any) => j.status === "done")).toHaveLength(4);
  // the index now carries the new model id only
  const again = await runCliJson(["--data-dir", dir, "reindex"]);
  expect(again.requeued).toBe(0);

  const missing = await runCli([
    "--data-dir",
    dir,
    "ingest",
    join(media, "nope"),
    "--account",
    acct.id,
    "--collection",
    "clips",
  ]);
  expect(missing.code).toBe(1);
}, 120_000);
