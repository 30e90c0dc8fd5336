import type { Metrics } from "./metrics.ts";

type Counted<K extends string> = ({ n: number } & Record<K, string>)[];

/**
 * The server's gauges on GET /metrics, each read when scraped. The sources are handed in as
 * functions so this module depends on nothing above observability/ (the layers test).
 */
export function registerAppGauges(
  metrics: Metrics,
  s: {
    jobCounts: () => Promise<Counted<"status">>;
    taskCounts: () => Promise<Counted<"kind" | "state">>;
    searchIndexRows: () => number;
    searchIndexWarm: () => { state: string; fraction: number; waiting: number } | null | undefined;
    inferenceRunning: () => boolean;
    ocrWorkers: () => number;
    idleMemoryPasses: () => number;
    /** Whether this process holds the leader lock (always on the embedded store). */
    isLeader: () => boolean;
  },
): void {
  metrics.gauge(
    "vsearch_leader",
    "1 on the process that runs the cluster-wide duties (the leader lock on PostgreSQL; always on the embedded store), else 0",
    () => [{ value: s.isLeader() ? 1 : 0 }],
  );
  metrics.gauge("vsearch_jobs", "Indexing jobs by status, all nodes (reported by the leader only)", async () =>
    (await s.jobCounts()).map((r) => ({ labels: { status: r.status }, value: r.n })),
  );
  metrics.gauge(
    "vsearch_tasks",
    "Tasks in the queue (ingest, ocr, rendition) waiting or running, all nodes",
    async () => (await s.taskCounts()).map((r) => ({ labels: { kind: r.kind, state: r.state }, value: r.n })),
  );
  metrics.gauge("vsearch_search_index_vectors", "Vectors held in the in-memory search index", () => [
    { value: s.searchIndexRows() },
  ]);
  metrics.gauge(
    "vsearch_search_index_loading",
    "1 while the in-memory search index loads every account's vectors after a start (vector searches wait, then 503), else 0",
    () => [{ value: s.searchIndexWarm()?.state === "warming" ? 1 : 0 }],
  );
  metrics.gauge(
    "vsearch_search_index_loaded_ratio",
    "Share of the stored vectors the start-up load of the search index has read, 0-1 (1 once warm)",
    () => [{ value: s.searchIndexWarm()?.fraction ?? 0 }],
  );
  metrics.gauge(
    "vsearch_search_index_waiting",
    "Vector searches waiting for the start-up load of the search index right now (each answers or 503s within search_index wait)",
    () => [{ value: s.searchIndexWarm()?.waiting ?? 0 }],
  );
  metrics.gauge("vsearch_inference_running", "1 while an inference worker pool runs (models loaded), else 0", () => [
    { value: s.inferenceRunning() ? 1 : 0 },
  ]);
  metrics.gauge(
    "vsearch_ocr_workers",
    "OCR worker threads running (0 before the first frame with text and after an idle close)",
    () => [{ value: s.ocrWorkers() }],
  );
  metrics.gauge("vsearch_idle_memory_passes", "Idle memory passes run since start (src/system/idle-memory.ts)", () => [
    { value: s.idleMemoryPasses() },
  ]);
}
