/** Worker side of truthFromFileThreads: one share of the queries against the whole file. */
import { type TruthSet, truthFromFile } from "./exact-file.ts";

declare const self: Worker;
self.onmessage = (e: MessageEvent<{ path: string; n: number; dim: number; k: number; sets: TruthSet[] }>) => {
  const { path, n, dim, k, sets } = e.data;
  self.postMessage(truthFromFile(path, n, dim, k, sets));
};
