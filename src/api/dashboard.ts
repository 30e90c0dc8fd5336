/**
 * The browser surface: the dashboard at `/` (+ its hashed `/assets/*`) and the API reference at
 * `/docs` (Scalar's bundle, served from this server: no CDN, no web fonts, works air-gapped).
 *
 * The dashboard gets a strict Content-Security-Policy (same-origin only, no inline script or style):
 * it talks to the /v1 API and plays presigned /media URLs of this same server. Scalar injects its
 * styles at run time, so /docs allows inline *styles* only; scripts stay same-origin there too.
 */
import type { Context } from "hono";
import type { Api, HttpDeps } from "../http/deps.ts";
import type { AppEnv } from "../http/types.ts";
import { bucketOrigin } from "../media/object-store-s3.ts";
import { type DashboardAssets, dashboardAssets, type StaticAsset } from "./dashboard-assets.ts";

const COMMON = "default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";
export const DASHBOARD_CSP = `${COMMON}; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; manifest-src 'self'`;

/** With the media in a bucket, media links redirect to it (api/media-serving.ts): images and video may load from its origin too. */
export const dashboardCsp = (mediaOrigin: string | null): string =>
  mediaOrigin
    ? DASHBOARD_CSP.replace("img-src 'self'", `img-src 'self' ${mediaOrigin}`).replace(
        "media-src 'self'",
        `media-src 'self' ${mediaOrigin}`,
      )
    : DASHBOARD_CSP;
export const DOCS_CSP = `${COMMON}; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'`;

/** Scalar's configuration: the spec from this server, no default fonts (fonts.scalar.com), no proxy, no "open in client" links out. */
const DOCS_INIT = `Scalar.createApiReference("#app", ${JSON.stringify({
  url: "/v1/openapi.json",
  withDefaultFonts: false,
  proxyUrl: "",
  hideClientButton: true,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
  telemetry: false,
  theme: "default",
  metaData: { title: "vsearch API" },
})});\n`;

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>vsearch API reference</title></head>
<body><noscript>The API reference needs JavaScript; the raw OpenAPI document is at <a href="/v1/openapi.json">/v1/openapi.json</a>.</noscript>
<div id="app"></div>
<script src="/docs/scalar.js"></script>
<script src="/docs/init.js"></script>
</body></html>
`;

function send(c: Context<AppEnv>, body: Uint8Array | string, type: string, cache: string, csp?: string): Response {
  const headers: Record<string, string> = {
    "Content-Type": type,
    "Cache-Control": cache,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
  };
  if (csp) headers["Content-Security-Policy"] = csp;
  return c.body(typeof body === "string" ? body : (body as Uint8Array<ArrayBuffer>), 200, headers);
}

interface Prepared {
  body: Uint8Array;
  gzip: Uint8Array | null;
  etag: string;
}

/** Bytes, their gzip (text only: Scalar's 4.3 MB bundle goes out as 1.3 MB) and an ETag, computed once per file. */
async function prepare(a: StaticAsset): Promise<Prepared> {
  const body = await a.body();
  const text = /^text\/|javascript|svg/.test(a.type);
  const etag = `"${new Bun.CryptoHasher("sha256").update(body).digest("hex").slice(0, 32)}"`;
  return { body, gzip: text ? Bun.gzipSync(body as Uint8Array<ArrayBuffer>) : null, etag };
}

function serveAsset(c: Context<AppEnv>, a: StaticAsset, p: Prepared, csp?: string): Response {
  const cache = a.immutable ? "public, max-age=31536000, immutable" : "no-cache";
  const inm = c.req.header("if-none-match");
  if (inm && inm.split(/\s*,\s*/).includes(p.etag)) return c.body(null, 304, { ETag: p.etag, "Cache-Control": cache });
  const gz = p.gzip && /\bgzip\b/.test(c.req.header("accept-encoding") ?? "");
  const res = send(c, gz ? p.gzip! : p.body, a.type, cache, csp);
  res.headers.set("ETag", p.etag);
  res.headers.set("Vary", "Accept-Encoding");
  if (gz) res.headers.set("Content-Encoding", "gzip");
  return res;
}

export function registerDashboardRoutes(app: Api, deps: HttpDeps): void {
  const csp = dashboardCsp(bucketOrigin(deps.config));
  // Loaded on the first request, not at start: `serve` from source bundles web/ then, and a broken
  // web/ source is retried on the next request instead of keeping the error.
  let loaded: Promise<DashboardAssets> | null = null;
  const assets = () =>
    (loaded ??= dashboardAssets().catch((e) => {
      loaded = null;
      throw e;
    }));
  const prepared = new Map<string, Promise<Prepared>>();
  const serve = (c: Context<AppEnv>, a: StaticAsset, csp?: string) => {
    let p = prepared.get(a.path);
    if (!p) prepared.set(a.path, (p = prepare(a)));
    return p.then((ready) => serveAsset(c, a, ready, csp));
  };
  app.get("/", async (c) => {
    const page = (await assets()).web.find((a) => a.path === "/")!;
    return serve(c, page, csp);
  });
  app.get("/assets/:name", async (c) => {
    const a = (await assets()).web.find((x) => x.path === `/assets/${c.req.param("name")}`);
    if (!a) return c.notFound();
    return serve(c, a);
  });
  app.get("/docs", (c) => send(c, DOCS_HTML, "text/html; charset=utf-8", "no-cache", DOCS_CSP));
  app.get("/docs/init.js", (c) => send(c, DOCS_INIT, "text/javascript; charset=utf-8", "no-cache"));
  app.get("/docs/scalar.js", async (c) => serve(c, (await assets()).scalar));
}
