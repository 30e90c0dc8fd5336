import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.ts";
import {
  addVideo,
  createCollection,
  createTenant,
  HandEmbedder,
  indexVideo,
  type SearchTestApp,
  startSearchApp,
} from "./helpers.ts";

/** `vsearch search` on a data dir (a real subprocess; no model installed there, so transcript only). */
let t: SearchTestApp;
let accountId: string;

beforeAll(async () => {
  t = await startSearchApp({ embedder: new HandEmbedder({}) });
  accountId = (await createTenant(t)).accountId;
  const talks = await createCollection(t, accountId, "Talks");
  const other = await createCollection(t, accountId, "Other");
  await indexVideo(t, await addVideo(t, accountId, talks, { filename: "keynote.mp4" }), {
    transcript: [{ start: 12.5, end: 15, text: "The budget doubled this year." }],
  });
  await indexVideo(t, await addVideo(t, accountId, other, { filename: "other.mp4" }), {
    transcript: [{ start: 1, end: 2, text: "Budget talk elsewhere." }],
  });
  await t.app.close();
});

afterAll(() => rmSync(t.dir, { recursive: true, force: true }));

describe("vsearch search", () => {
  it("prints a table of moments, and JSON with --json", async () => {
    const human = await runCli([
      "--data-dir",
      t.dir,
      "search",
      "budget",
      "--account",
      accountId,
      "--collection",
      "Talks",
    ]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain("1 matching video (page 1, modes transcript, ocr)");
    expect(human.stdout).toMatch(/skipped video: MODEL_NOT_INSTALLED/);
    expect(human.stdout).toMatch(/RANK\s+VIDEO\s+TYPE\s+START\s+END\s+SCORE/);
    expect(human.stdout).toMatch(
      /1\s+keynote\.mp4\s+transcript\s+12\.50\s+15\.00\s+1\.000\s+transcript:default\s+The budget doubled this year\./,
    );

    const json = await runCli([
      "--data-dir",
      t.dir,
      "--json",
      "search",
      "budget",
      "--account",
      accountId,
      "--modes",
      "transcript",
    ]);
    expect(json.code, json.stderr).toBe(0);
    const out = JSON.parse(json.stdout);
    expect(out.meta.total).toBe(2);
    expect(out.data.flatMap((v: any) => v.segments.map((s: any) => s.text_content)).sort()).toEqual([
      "Budget talk elsewhere.",
      "The budget doubled this year.",
    ]);
  });

  it("errors are one line: unknown collection, a mode without its model", async () => {
    const missing = await runCli([
      "--data-dir",
      t.dir,
      "search",
      "budget",
      "--account",
      accountId,
      "--collection",
      "Nope",
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toMatch(/^error: .*COLLECTION_NOT_FOUND/);
    const noModel = await runCli(["--data-dir", t.dir, "search", "budget", "--account", accountId, "--modes", "video"]);
    expect(noModel.code).toBe(1);
    expect(noModel.stderr).toMatch(/MODEL_NOT_INSTALLED/);
  });
});
