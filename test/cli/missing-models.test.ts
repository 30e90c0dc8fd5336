/**
 * A newcomer's path through the real CLI (subprocesses on one data dir): ingest with no model says
 * which stages it skipped and how to fix it, `doctor` warns per role and counts the videos indexed
 * without it, search names the missing models; `models pull` from a loopback Hugging Face hub
 * (HF_ENDPOINT) and `models import` end with how many videos `reindex` would enrich; after
 * `reindex` the warnings are gone and `--min-score 0` ranks every video on the tiny random models.
 */
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { runCli, runCliJson } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";
import { type FakeHub, startHub } from "../models/hub.ts";
import { tempDir } from "../helpers/temp.ts";

const dir = tempDir("vsearch-missing-models-");
let hub: FakeHub;
beforeAll(() => {
  hub = startHub({ "Xenova/whisper-tiny.en@main": join(FIXTURE_MODELS, "tiny-random-whisper") });
});
afterAll(async () => {
  await hub?.stop();
});

const CLIP_FIX =
  "no image-text model installed; fix: vsearch models pull clip-vit-base-patch32 (air-gapped: vsearch models import <dir|tar> --role image-text)";
const SPEECH_FIX =
  "no speech model installed; fix: vsearch models pull whisper-tiny.en (air-gapped: vsearch models import <dir|tar> --role speech)";

/** A short H.264/AAC clip: a lavfi test source and a tone. */
const clip = (out: string, src: string, hz: number) =>
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      `${src}=size=160x120:rate=10:duration=2`,
      "-f",
      "lavfi",
      "-i",
      `sine=frequency=${hz}:duration=2`,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ],
    out,
  );

test("every missing model explains itself, from ingest to search, until pull/import and reindex", async () => {
  const media = scratchDir("missing-models");
  const other = scratchDir("missing-models-other");
  await clip(join(media, "a.mp4"), "testsrc", 440);
  await clip(join(media, "b.mp4"), "testsrc2", 880);
  await clip(join(other, "c.mp4"), "smptebars", 660);
  const d = ["--data-dir", dir];
  const acct = await runCliJson([...d, "accounts", "create", "--name", "newcomer"]);

  // Ingest: indexed, exit 0, and each skipped stage with why (JSON and human).
  const ingest = await runCliJson([...d, "ingest", media, "--account", acct.id, "--collection", "clips"]);
  expect(ingest.summary).toEqual({ indexed: 2 });
  for (const f of ingest.files) {
    expect(f.skipped_stages).toEqual({
      frames: CLIP_FIX,
      embeddings: CLIP_FIX,
      audio: SPEECH_FIX,
      transcript: SPEECH_FIX,
    });
  }
  const human = await runCli([...d, "ingest", other, "--account", acct.id, "--collection", "more"]);
  expect(human.code, human.stderr).toBe(0);
  expect(human.stdout).toContain(`skipped frames, embeddings on 1 video: ${CLIP_FIX}`);
  expect(human.stdout).toContain(`skipped audio, transcript on 1 video: ${SPEECH_FIX}`);

  // doctor: checks pass, one warning per role, counting the videos indexed without it.
  const doc = await runCliJson([...d, "doctor"]);
  expect(doc.ok).toBe(true);
  expect(doc.warnings.map((w: any) => [w.role, w.code, w.videos])).toEqual([
    ["image-text", "MODEL_NOT_INSTALLED", 3],
    ["speech", "MODEL_NOT_INSTALLED", 3],
  ]);
  expect(doc.warnings[1].fix).toBe(
    "vsearch models pull whisper-tiny.en (air-gapped: vsearch models import <dir|tar> --role speech), then vsearch reindex",
  );
  const docHuman = await runCli([...d, "doctor"]);
  expect(docHuman.stdout).toMatch(/all checks passed, 2 warnings/);
  expect(docHuman.stdout).toContain(
    "warning       speech: no speech model installed: no transcripts (transcript mode); 3 videos indexed without it",
  );

  // search: nothing can run, and meta says which model each mode needs.
  const s0 = await runCliJson([...d, "search", "hello", "--account", acct.id]);
  expect(s0.data).toEqual([]);
  expect(s0.meta.skipped_modes).toEqual({
    video: `MODEL_NOT_INSTALLED: ${CLIP_FIX}`,
    scene: `MODEL_NOT_INSTALLED: ${CLIP_FIX}`,
    transcript: `MODEL_NOT_INSTALLED: ${SPEECH_FIX}`,
  });

  // pull from the hub (HF_ENDPOINT), then import: each ends with what reindex would do.
  const pull = await runCli([...d, "models", "pull", "whisper-tiny.en", "--no-load-check"], { HF_ENDPOINT: hub.url });
  expect(pull.code, pull.stderr).toBe(0);
  expect(pull.stdout).toMatch(
    /^Installed whisper-tiny\.en \(speech, q8\) as whisper-tiny\.en@[0-9a-f]{12}, now the active speech model/,
  );
  expect(pull.stdout).toContain(`from ${hub.url}/Xenova/whisper-tiny.en/resolve/main (commit `);
  expect(pull.stdout).toContain(
    "`vsearch reindex` would enrich 3 videos indexed without the active models (or with older ones).",
  );
  expect(pull.stderr).toContain("whisper-tiny.en: onnx/encoder_model_quantized.onnx");
  expect(hub.requests.some((q) => q.origin === "cdn")).toBe(true);
  const imp = await runCliJson([
    ...d,
    "models",
    "import",
    join(FIXTURE_MODELS, "tiny-random-clip"),
    "--role",
    "image-text",
    "--no-load-check",
  ]);
  expect(imp.reindex).toEqual({ videos: 3, command: "vsearch reindex" });

  const doc2 = await runCliJson([...d, "doctor"]);
  expect(doc2.warnings.map((w: any) => [w.role, w.code, w.videos, w.fix])).toEqual([
    ["image-text", "REINDEX_NEEDED", 3, "vsearch reindex"],
    ["speech", "REINDEX_NEEDED", 3, "vsearch reindex"],
  ]);

  const re = await runCliJson([...d, "reindex"]);
  expect(re.requeued).toBe(3);
  expect(re.videos.map((v: any) => v.status)).toEqual(["indexed", "indexed", "indexed"]);
  expect((await runCliJson([...d, "doctor"])).warnings).toEqual([]);

  // min_score 0 on the tiny random models: every video comes back, ranked.
  const s1 = await runCliJson([
    ...d,
    "search",
    "a colour test pattern",
    "--account",
    acct.id,
    "--modes",
    "video",
    "--min-score",
    "0",
  ]);
  expect(s1.meta.skipped_modes).toEqual({});
  expect(s1.meta.total).toBe(3);
  expect(s1.data).toHaveLength(3);
  const firstRanks = s1.data.map((v: any) => v.segments[0].rank);
  expect(firstRanks).toEqual([...firstRanks].sort((x: number, y: number) => x - y));
  expect(firstRanks[0]).toBe(1);
  const bad = await runCli([...d, "search", "x", "--account", acct.id, "--min-score", "2"]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain("min_score");
}, 240_000);
