import type { EmbeddedAssets } from "./types.ts";

/**
 * The native files carried inside the compiled binary. Under `bun run` and vitest there are none,
 * and this module says so. For the compiled binary only, build.ts swaps this module for a generated
 * one (`embeddedAssetsModule` in build.ts) that imports each file `with { type: "file" }` and
 * returns their `/$bunfs/…` paths. Those import attributes exist only in Bun's bundler, so they never
 * reach vite/vitest, and no source file in the tree names a platform-specific path.
 */
export function embeddedAssets(): EmbeddedAssets | null {
  return null;
}
