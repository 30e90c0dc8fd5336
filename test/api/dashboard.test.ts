import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestApp, type TestApp } from "../helpers/app.ts";

// What the browser gets at `/` and `/docs` (the pages themselves are driven in a real browser by
// test/e2e/dashboard.e2e.ts against the compiled binary); here: headers, caching, no outside origin.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const EXTERNAL = /<(script|link|img)[^>]+(src|href)="(https?:)?\/\//;

describe("dashboard and /docs (SPEC §10)", () => {
  test("/ serves the dashboard page with a strict CSP and no-cache; its hashed assets are immutable", async () => {
    const res = await t.request("GET", "/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    const html = await res.text();
    expect(html).not.toMatch(EXTERNAL);
    expect(html).not.toMatch(/<script>(?!<)/); // no inline script
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.some((a) => /^\/assets\/main-[a-z0-9]+\.js$/.test(a))).toBe(true);
    expect(assets.some((a) => /^\/assets\/main-[a-z0-9]+\.css$/.test(a))).toBe(true);
    // The favicon (issue 22): a hashed SVG of its own, linked from the page.
    expect(html).toMatch(/<link rel="icon" type="image\/svg\+xml" href="\/assets\/favicon-[a-z0-9]+\.svg">/);
    for (const a of assets) {
      const r = await t.request("GET", a);
      expect(r.status).toBe(200);
      expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      const kind = a.endsWith(".js") ? /^text\/javascript/ : a.endsWith(".svg") ? /^image\/svg\+xml/ : /^text\/css/;
      expect(r.headers.get("content-type")).toMatch(kind);
      const text = await r.text();
      expect(text.length).toBeGreaterThan(a.endsWith(".svg") ? 100 : 1000);
      expect(text).not.toMatch(/https?:\/\/(?!www\.w3\.org|example\.org)[a-z]/i); // no outside URL in our own bundle (SVG/MathML namespaces and a placeholder aside)
    }
  });

  test("an unknown asset is a 404 in the error shape, and the API's 404s are unchanged", async () => {
    const res = await t.request("GET", "/assets/main-00000000.js");
    expect(res.status).toBe(404);
    expect((await res.json()).detail.code).toBe("NOT_FOUND");
    expect((await t.request("GET", "/v1/nope")).status).toBe(404);
  });

  test("/docs loads Scalar from this server only, configured without default fonts", async () => {
    const res = await t.request("GET", "/docs");
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toMatch(/https?:/);
    const html = await res.text();
    expect(html).not.toMatch(EXTERNAL);
    expect(html).toContain('<script src="/docs/scalar.js">');
    const init = await (await t.request("GET", "/docs/init.js")).text();
    expect(init).toContain('"url":"/v1/openapi.json"');
    expect(init).toContain('"withDefaultFonts":false');
    const scalar = await t.request("GET", "/docs/scalar.js");
    expect(scalar.status).toBe(200);
    expect(Number((await scalar.arrayBuffer()).byteLength)).toBeGreaterThan(1_000_000);
  });

  test("files go out gzipped when the browser accepts it, and revalidate with an ETag (304)", async () => {
    const plain = await t.request("GET", "/docs/scalar.js");
    const raw = new Uint8Array(await plain.arrayBuffer());
    const etag = plain.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const gz = await t.request("GET", "/docs/scalar.js", { headers: { "accept-encoding": "gzip, deflate" } });
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    const packed = new Uint8Array(await gz.arrayBuffer());
    expect(packed.length).toBeLessThan(raw.length / 2);
    expect(Buffer.from(Bun.gunzipSync(packed)).equals(Buffer.from(raw))).toBe(true); // (toEqual on 4 MB arrays takes minutes)
    const again = await t.request("GET", "/docs/scalar.js", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    const page = await t.request("GET", "/", { headers: { "if-none-match": '"something-else"' } });
    expect(page.status).toBe(200);
  });
});
