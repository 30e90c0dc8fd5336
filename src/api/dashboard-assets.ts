/**
 * The dashboard's files and Scalar's API reference bundle, for src/api/dashboard.ts.
 *
 * Under `bun src/main.ts serve` (and vitest) the dashboard is bundled from web/ on first use, in
 * memory, and Scalar is read from node_modules. For the compiled binary, build.ts swaps this module
 * for a generated one (`dashboardAssetsModule` in build.ts) that embeds the same files
 * `with { type: "file" }`, so the binary never needs web/ or node_modules.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export interface StaticAsset {
  path: string;
  type: string;
  immutable: boolean;
  body: () => Promise<Uint8Array>;
}

export interface DashboardAssets {
  web: StaticAsset[];
  /** @scalar/api-reference's standalone browser bundle. */
  scalar: StaticAsset;
}

/** Bundles web/ (about 50 ms) and locates Scalar; src/api/dashboard.ts calls it once per app, on first use. */
export async function dashboardAssets(): Promise<DashboardAssets> {
  // A variable specifier: the bundler must not follow web/bundle.ts (and Bun.build) into the binary.
  const bundler = "../../web/bundle.ts";
  const { bundleWeb } = (await import(bundler)) as typeof import("../../web/bundle.ts");
  const web = (await bundleWeb()).map((a) => ({
    path: a.path,
    type: a.type,
    immutable: a.immutable,
    body: async () => a.body,
  }));
  const require = createRequire(import.meta.url);
  const file = join(dirname(require.resolve("@scalar/api-reference")), "browser", "standalone.js");
  return {
    web,
    scalar: {
      path: "/docs/scalar.js",
      type: "text/javascript; charset=utf-8",
      immutable: false,
      body: async () => Bun.file(file).bytes(),
    },
  };
}
