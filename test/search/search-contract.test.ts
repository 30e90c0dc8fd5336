/**
 * Issue 22, one API contract for search: JSON as well as forms (the same fields, the same 422s),
 * `modes` repeated or comma-separated everywhere, and an empty answer that says what to try
 * (meta.hints over HTTP, `hint:` lines in the CLI).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createKeyTenant, json, startTestApp, type Tenant, type TestApp, upload } from "../helpers/app.ts";
import { fixedCatalog, tinyWhisper } from "../helpers/models.ts";
import { runCli, runCliJson } from "../helpers/cli.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { tempDirs } from "../helpers/temp.ts";

let t: TestApp;
let a: Tenant;
beforeAll(async () => {
  // A speech model makes the transcript mode runnable (lexical: no inference for a text query).
  t = await startTestApp({ VSEARCH_RATE_LIMIT_SEARCH: "1000" }, { models: fixedCatalog({ speech: tinyWhisper }) });
  a = await createKeyTenant(t);
});
afterAll(() => t.close());

const search = (body: BodyInit | object, headers: Record<string, string> = {}) =>
  t.request("POST", "/v1/search", {
    token: a.key,
    ...(body instanceof FormData || body instanceof URLSearchParams || typeof body === "string"
      ? { body: body as BodyInit, headers }
      : { json: body }),
  });

describe("POST /v1/search takes JSON as well as forms", () => {
  test("the same request as JSON, urlencoded and multipart, with modes as a list or commas", async () => {
    const multipart = new FormData();
    multipart.append("query", "zebra");
    multipart.append("modes", "ocr,transcript");
    multipart.append("per_page", "5");
    const mixed = new FormData();
    mixed.append("query", "zebra");
    mixed.append("modes", "ocr");
    mixed.append("modes", "transcript");
    mixed.append("per_page", "5");
    const answers = await Promise.all([
      search({ query: "zebra", modes: ["ocr", "transcript"], per_page: 5, include_hidden: true }),
      search({ query: "zebra", modes: "ocr, transcript", per_page: "5" }),
      search(new URLSearchParams("query=zebra&modes=ocr,transcript&per_page=5")),
      search(multipart),
      search(mixed),
    ]);
    for (const res of answers) {
      const body = await json(res);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.meta).toMatchObject({ per_page: 5, total: 0 });
      expect([...body.meta.modes].sort()).toEqual(["ocr", "transcript"]);
    }
  });

  test("the same 422s, field by field, whichever encoding", async () => {
    const cases: [object, string, (string | number)[]][] = [
      [{ query: "x", modes: "ocr,bogus" }, "modes=ocr,bogus", ["body", "modes", 1]],
      [{ query: "x", per_page: 51 }, "per_page=51", ["body", "per_page"]],
      [{ query: "x", colour: "red" }, "colour=red", ["body", "colour"]],
      [{ query: "x", min_score: 2 }, "min_score=2", ["body", "min_score"]],
    ];
    for (const [asJson, form, loc] of cases) {
      const bodies = [await search(asJson), await search(new URLSearchParams(`query=x&${form}`))].map(async (r) => ({
        status: r.status,
        detail: (await json(r)).detail,
      }));
      const [j, f] = await Promise.all(bodies);
      expect(j.status, JSON.stringify(j)).toBe(422);
      expect(f.status, JSON.stringify(f)).toBe(422);
      expect(j.detail[0].loc).toEqual(loc);
      expect(f.detail[0].loc).toEqual(loc);
      expect(j.detail[0].type).toBe(f.detail[0].type);
    }
    // A reference image is a file: JSON cannot carry one (multipart can).
    const image = await search({ query: "x", image: "aGVsbG8=" });
    expect(image.status).toBe(422);
    // The cross-field rule is the service's, the same for both: one of query, image, image_url.
    const none = [await search({ per_page: 3 }), await search(new URLSearchParams("per_page=3"))];
    expect(none.map((r) => r.status)).toEqual([422, 422]);
  });
});

describe("POST /v1/search/feedback takes JSON as well as forms", () => {
  // Its effect in each encoding: test/search/search.test.ts ("feedback"); here, the same 422s.
  test("a missing field is the same 422 in each encoding; a body in neither is a 422", async () => {
    const send = (init: { json?: object; body?: BodyInit }) =>
      t.request("POST", "/v1/search/feedback", { token: a.key, ...init });
    const missing = [
      await send({ json: { video_id: "vid_x", signal: "down" } }),
      await send({ body: new URLSearchParams("video_id=vid_x&signal=down") }),
    ];
    for (const r of missing) {
      const body = await json(r);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(body.detail[0].loc).toEqual(["body", "timestamp_start"]);
    }
    const none = await send({});
    const body = await json(none);
    expect(none.status, JSON.stringify(body)).toBe(422);
    expect(body.detail[0].loc).toEqual(["body"]);
  });
});

describe("an empty answer says what to try", () => {
  test("nothing indexed yet, then: min score, more modes, a wider scope, other words", async () => {
    const empty = await json(await search({ query: "zebra", modes: ["ocr"] }));
    expect(empty.meta.hints.map((h: any) => h.code)).toEqual(["NOTHING_INDEXED"]);

    const col = (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name: "c" } }))).data.id;
    const video = (await json(await upload(t, a, col, await smallMp4(scratchDir("search-contract"))))).data.video_id;
    const queued = await json(await search({ query: "zebra", modes: ["ocr"] }));
    expect(queued.meta.hints.map((h: any) => h.code)).toEqual(["INDEXING"]);
    await t.stores.videos.update(video, { status: "ready" });

    const r = await json(await search({ query: "zebra", modes: ["ocr"], collection_id: col, min_score: 0.6 }));
    const codes = r.meta.hints.map((h: any) => h.code);
    expect(codes).toEqual(expect.arrayContaining(["MIN_SCORE", "MODES", "SCOPE", "REPHRASE"]));
    expect(r.meta.hints.find((h: any) => h.code === "MIN_SCORE").message).toContain("now 0.6");
  });

  test("the CLI prints the hints under an empty result", async () => {
    const d = tempDirs("vsearch-hints-").make();
    await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Solo"]);
    const r = await runCli(["--data-dir", d, "search", "zebra", "--modes", "ocr"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("No moment matched.");
    expect(r.stdout).toMatch(/hint: There is no indexed video in this account/);
  }, 120_000);
});
