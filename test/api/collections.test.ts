import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startTestApp, startWithTenants, type Tenant, type TestApp } from "../helpers/app.ts";
import { allCollections } from "../helpers/stores.ts";

let t: TestApp;
let a: Tenant;
let b: Tenant;
beforeAll(async () => void ({ t, a, b } = await startWithTenants()));
afterAll(() => t.close());

const create = (token: string, name: unknown) => t.request("POST", "/v1/collections", { token, json: { name } });
const rows = async () => await allCollections(t.stores);

describe("collections (SPEC §4)", () => {
  test("create → 201 with the collection shape; name trimmed", async () => {
    const res = await create(a.key, "  Trailers  ");
    expect(res.status).toBe(201);
    const { data } = await json(res);
    expect(data).toEqual({
      id: expect.stringMatching(/^col_[0-9A-Za-z]{20}$/),
      user_id: a.accountId,
      name: "Trailers",
      created_at: expect.any(String),
      video_count: 0,
      thumbnail_urls: [],
    });
  });

  test("names unique per account (409), but another account may reuse one", async () => {
    await create(a.key, "Dup");
    const again = await create(a.key, " Dup ");
    expect(again.status).toBe(409);
    expect((await json(again)).detail.code).toBe("COLLECTION_NAME_TAKEN");
    expect((await create(b.key, "Dup")).status).toBe(201);
  });

  test("bad names: 0 or 256 chars, whitespace-only, wrong type, unknown field — 422 and nothing stored", async () => {
    const before = await rows();
    const cases: [unknown, string][] = [
      [{ name: "" }, "string_too_short"],
      [{ name: "x".repeat(256) }, "string_too_long"],
      [{ name: " \t\n " }, "string_too_short"],
      [{ name: 42 }, "string_type"],
      [{ name: null }, "string_type"],
      [{ name: "ok", color: "red" }, "extra_forbidden"],
      [[], "object_type"],
    ];
    for (const [body, type] of cases) {
      const res = await t.request("POST", "/v1/collections", { token: a.key, json: body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect((await json(res)).detail[0].type, JSON.stringify(body)).toBe(type);
    }
    expect((await create(a.key, "x".repeat(255))).status).toBe(201);
    expect(await rows()).toBe(before + 1);
  });

  test("list: oldest first, with totals; get adds duration and storage", async () => {
    const fresh = await createTenant(t, "Lister");
    for (const n of ["one", "two", "three"]) await create(fresh.key, n);
    const res = await t.request("GET", "/v1/collections", { token: fresh.readOnlyKey });
    const body = await json(res);
    expect(body.data.map((c: any) => c.name)).toEqual(["one", "two", "three"]);
    expect(body.meta).toMatchObject({ total: 3, page: 1, per_page: 100 });
    const paged = await json(await t.request("GET", "/v1/collections?page=2&per_page=2", { token: fresh.key }));
    expect(paged.data.map((c: any) => c.name)).toEqual(["three"]);
    const got = await json(await t.request("GET", `/v1/collections/${body.data[0].id}`, { token: fresh.key }));
    expect(got.data).toMatchObject({
      name: "one",
      video_count: 0,
      total_duration_secs: 0,
      storage_bytes: 0,
      thumbnail_urls: [],
    });
    expect((await t.request("GET", "/v1/collections?per_page=101", { token: fresh.key })).status).toBe(422);
  });

  test("rename: 200, 409 on a taken name, 422 on a bad one", async () => {
    const id = (await json(await create(a.key, "Old"))).data.id;
    await create(a.key, "Taken");
    const ok = await t.request("PATCH", `/v1/collections/${id}`, { token: a.key, json: { name: "New" } });
    expect(ok.status).toBe(200);
    expect((await json(ok)).data.name).toBe("New");
    const taken = await t.request("PATCH", `/v1/collections/${id}`, { token: a.key, json: { name: "Taken" } });
    expect(taken.status).toBe(409);
    expect((await t.request("PATCH", `/v1/collections/${id}`, { token: a.key, json: { name: "" } })).status).toBe(422);
    expect((await json(await t.request("GET", `/v1/collections/${id}`, { token: a.key }))).data.name).toBe("New");
  });

  test("delete → 204, then 404", async () => {
    const id = (await json(await create(a.key, "Doomed"))).data.id;
    const del = await t.request("DELETE", `/v1/collections/${id}`, { token: a.key });
    expect(del.status).toBe(204);
    const gone = await t.request("GET", `/v1/collections/${id}`, { token: a.key });
    expect(gone.status).toBe(404);
    expect((await json(gone)).detail.code).toBe("COLLECTION_NOT_FOUND");
  });

  test("tenant isolation: another account's collection is 404 for get, rename and delete, and not listed", async () => {
    const id = (await json(await create(a.key, "Private"))).data.id;
    for (const [method, body] of [["GET"], ["PATCH", { name: "Mine" }], ["DELETE"]] as const) {
      const res = await t.request(method, `/v1/collections/${id}`, { token: b.key, json: body });
      expect(res.status).toBe(404);
      expect((await json(res)).detail.code).toBe("COLLECTION_NOT_FOUND");
    }
    const listed = (await json(await t.request("GET", "/v1/collections", { token: b.key }))).data;
    expect(listed.find((c: any) => c.id === id)).toBeUndefined();
    expect((await json(await t.request("GET", `/v1/collections/${id}`, { token: a.key }))).data.name).toBe("Private");
  });

  test("read_only keys list and get but cannot write (403)", async () => {
    const id = (await json(await create(a.key, "RO target"))).data.id;
    expect((await t.request("GET", `/v1/collections/${id}`, { token: a.readOnlyKey })).status).toBe(200);
    for (const [method, path, body] of [
      ["POST", "/v1/collections", { name: "nope" }],
      ["PATCH", `/v1/collections/${id}`, { name: "nope" }],
      ["DELETE", `/v1/collections/${id}`, undefined],
    ] as const) {
      const res = await t.request(method, path, { token: a.readOnlyKey, json: body });
      expect(res.status).toBe(403);
      expect((await json(res)).detail.code).toBe("FORBIDDEN");
    }
    expect((await json(await t.request("GET", `/v1/collections/${id}`, { token: a.key }))).data.name).toBe("RO target");
  });

  test("member sessions act with all permissions on their account", async () => {
    expect((await create(a.memberToken, "By member")).status).toBe(201);
  });
});

describe("rate limits (SPEC §8)", () => {
  test("429 after the limit with Retry-After and X-RateLimit-* headers; per key; resets after the window", async () => {
    const rt = await startTestApp({ VSEARCH_RATE_LIMIT_COLLECTIONS_READ: "3" });
    try {
      const ten = await createTenant(rt, "Limited");
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 4; i++) {
        last = await rt.request("GET", "/v1/collections", { token: ten.key });
        statuses.push(last.status);
        if (i === 0) {
          expect(last.headers.get("x-ratelimit-limit")).toBe("3");
          expect(last.headers.get("x-ratelimit-remaining")).toBe("2");
          expect(Number(last.headers.get("x-ratelimit-reset"))).toBeGreaterThan(0);
        }
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect((await json(last!)).detail.code).toBe("RATE_LIMIT_EXCEEDED");
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(last!.headers.get("x-ratelimit-remaining")).toBe("0");
      // another key has its own budget
      expect((await rt.request("GET", "/v1/collections", { token: ten.readOnlyKey })).status).toBe(200);
      rt.clock.now += 60_001;
      expect((await rt.request("GET", "/v1/collections", { token: ten.key })).status).toBe(200);
    } finally {
      await rt.close();
    }
  });
});
