// tesseract.js ships types for its public API only; the worker internals that
// src/ocr/tesseract-worker.ts reuses are plain CommonJS.
declare module "tesseract.js/src/worker-script/index.js" {
  const worker: {
    dispatchHandlers(packet: unknown, send: (obj: unknown) => void): void;
    setAdapter(adapter: Record<string, unknown>): void;
  };
  export default worker;
}
declare module "tesseract.js/src/worker-script/node/gunzip.js" {
  const gunzip: (data: Uint8Array) => Uint8Array;
  export default gunzip;
}
declare module "tesseract.js/src/worker-script/node/cache.js" {
  const cache: Record<string, (...args: never[]) => Promise<unknown>>;
  export default cache;
}
declare module "tesseract.js-core/tesseract-core-simd-lstm.js" {
  const factory: (opts: Record<string, unknown>) => Promise<unknown>;
  export default factory;
}
declare module "tesseract.js-core/tesseract-core-lstm.js" {
  const factory: (opts: Record<string, unknown>) => Promise<unknown>;
  export default factory;
}
