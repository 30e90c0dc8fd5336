/**
 * Bundles the dashboard (web/) into the files `/` and `/assets/*` serve: one JS file and one CSS
 * file with content-hashed names (so they can be cached forever) and index.html pointing at them.
 * Everything stays in memory: build.ts embeds the result in the compiled binary, and under
 * `bun src/main.ts serve` src/api/dashboard-assets.ts calls this on the first request. Nothing
 * here is ever written into the source tree, but for the generated API types: with `generateClient`
 * (build.ts) web/src/openapi.gen.ts is regenerated from the served OpenAPI document and the
 * dashboard is typechecked against it first (web/api-types.ts).
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface WebAsset {
  /** URL path: "/" for the page, "/assets/<name>-<hash>.<ext>" for the rest. */
  path: string;
  type: string;
  body: Uint8Array;
  /** Hashed names never change content: cache them for a year; index.html is revalidated. */
  immutable: boolean;
}

const WEB = dirname(fileURLToPath(import.meta.url));

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

export interface BundleOptions {
  /** Regenerate the typed API client's types from the OpenAPI document and typecheck the dashboard. */
  generateClient?: boolean;
  /** Told when the generated types changed (build.ts prints it). */
  onTypesChanged?: () => void;
}

export async function bundleWeb(opts: BundleOptions = {}): Promise<WebAsset[]> {
  if (opts.generateClient) {
    // Loaded only here: openapi-typescript and the TypeScript compiler are build-time tools.
    const { syncApiTypes, typecheckDashboard } = await import("./api-types.ts");
    if (await syncApiTypes()) opts.onTypesChanged?.();
    await typecheckDashboard();
  }
  const result = await Bun.build({
    entrypoints: [join(WEB, "src", "main.tsx")],
    target: "browser",
    format: "esm",
    minify: true,
    naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" },
    define: { "process.env.NODE_ENV": '"production"' },
    throw: false,
  });
  if (!result.success) throw new Error(`dashboard bundle failed:\n${result.logs.map(String).join("\n")}`);
  const assets: WebAsset[] = [];
  for (const out of result.outputs) {
    if (out.kind === "sourcemap") continue;
    const name = out.path.replace(/^.*[\\/]/, "");
    const ext = name.split(".").pop()!;
    assets.push({
      path: `/assets/${name}`,
      type: TYPES[ext] ?? "application/octet-stream",
      body: new Uint8Array(await out.arrayBuffer()),
      immutable: true,
    });
  }
  const js = assets.find((a) => a.path.endsWith(".js"));
  const css = assets.find((a) => a.path.endsWith(".css"));
  if (!js || !css)
    throw new Error(`dashboard bundle: expected a .js and a .css output, got ${assets.map((a) => a.path).join(", ")}`);
  // The favicon: one small SVG, content-hashed like the rest (no request for /favicon.ico).
  const icon = await Bun.file(join(WEB, "favicon.svg")).bytes();
  const iconPath = `/assets/favicon-${Bun.hash(icon).toString(36)}.svg`;
  assets.push({ path: iconPath, type: TYPES.svg, body: icon, immutable: true });
  const html = (await Bun.file(join(WEB, "index.html")).text())
    .replace("%CSS%", css.path)
    .replace("%JS%", js.path)
    .replace("%ICON%", iconPath);
  assets.push({ path: "/", type: "text/html; charset=utf-8", body: new TextEncoder().encode(html), immutable: false });
  return assets;
}

/** The JS and CSS sizes, raw and gzipped (for BENCHMARKS.md): `bun web/bundle.ts`. */
if (import.meta.main) {
  for (const a of await bundleWeb()) {
    console.log(
      `${a.path.padEnd(36)} ${String(a.body.length).padStart(8)} B raw ${String(Bun.gzipSync(a.body as Uint8Array<ArrayBuffer>).length).padStart(7)} B gzipped`,
    );
  }
}
