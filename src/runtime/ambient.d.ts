// Piscina's worker loop, imported by piscina-worker.ts. Not in piscina's `exports` map, so build.ts
// resolves it to the file beside piscina's main entry; it has no exports of its own.
declare module "piscina/dist/worker.js";
