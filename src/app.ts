/**
 * The composition root (the only one: server, CLI and tests all call createApp). Over the house's
 * ~450 lines because it is only wiring — about forty services, their stores and the event
 * subscriptions, each a few lines — and its option types; splitting the wiring would scatter the
 * one place that shows how everything connects. Flows live in named modules, not here: what a
 * job's end does to its video (videos/job-hooks.ts), the media links (playback/links.ts), /readyz
 * (system/readiness.ts), the gauges (observability/app-gauges.ts), the task queue's handlers.
 */
import { mkdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { assertConsistent, type Config } from "./config/config.ts";
import { memoryBudgetBytes } from "./config/memory-budget.ts";
import { createLogger, type Logger } from "./core/logger.ts";
import { openConfiguredStore } from "./store/database.ts";
import { describePostgres, type StoreBackendInfo } from "./store/describe.ts";
import type { Executor } from "./store/executor.ts";
import { AccountStore } from "./accounts/store.ts";
import { AccountService } from "./accounts/service.ts";
import { UserService } from "./accounts/users.ts";
import { SetupService } from "./accounts/setup.ts";
import { ApiKeyStore } from "./api-keys/store.ts";
import { ApiKeyService } from "./api-keys/service.ts";
import { SessionStore } from "./auth/store.ts";
import { AuthService } from "./auth/service.ts";
import { CollectionStore } from "./collections/store.ts";
import { CollectionService } from "./collections/service.ts";
import { createHttpApp } from "./api/app.ts";
import { RateLimiter } from "./http/rate-limit.ts";
import { DbRateLimiter } from "./http/rate-windows.ts";
import { ClusterEvents } from "./events/cluster.ts";
import { LeaderElection } from "./system/leader.ts";
import { listen } from "./store/pg/notify.ts";
import { ADVISORY_LOCKS, acquireAdvisoryLock } from "./store/pg/advisory-lock.ts";
import { Metrics } from "./observability/metrics.ts";
import { registerAppGauges } from "./observability/app-gauges.ts";
import { readiness } from "./system/readiness.ts";
import { videoJobHooks } from "./videos/job-hooks.ts";
import { mediaLinks } from "./playback/links.ts";
import type { Services } from "./services.ts";
import { clusterSecretFile, loadClusterSecret } from "./signing/cluster-secret.ts";
import { UrlSigner } from "./signing/url-signer.ts";
import { LinkOrigin, localBaseUrl } from "./signing/link-origin.ts";
import { VERSION } from "./version.ts";
import { EventBus } from "./events/bus.ts";
import { EventStore } from "./events/store.ts";
import { IndexStore } from "./indexing/store.ts";
import { VideoContent } from "./indexing/content.ts";
import { JobStore } from "./jobs/store.ts";
import { JobService } from "./jobs/service.ts";
import { LeaseQueue } from "./jobs/lease-queue.ts";
import { TASK_KINDS, type TaskKind, TaskStore } from "./jobs/task-store.ts";
import { NodeStore, type NodeRole } from "./nodes/store.ts";
import { NodeRegistry, RUNNING_FOR_MS } from "./nodes/registry.ts";
import { checkClusterSecret, SecretFingerprintStore, secretFingerprint } from "./signing/secret-fingerprint.ts";
import { ephemeralNodeId, loadOrCreateNodeId } from "./jobs/node-id.ts";
import { SHARED_ROOT_GRACE_MS, VideoFiles } from "./videos/files.ts";
import { bucketFromConfig } from "./media/object-store-s3.ts";
import { VideoStore } from "./videos/store.ts";
import { VideoService } from "./videos/service.ts";
import { UploadService } from "./upload/service.ts";
import { ffprobeSniffer } from "./upload/sniffer.ts";
import type { ModelCatalog } from "./models/roles.ts";
import { InferenceHost } from "./inference/host.ts";
import { IngestPipeline } from "./pipeline/ingest.ts";
import { OcrTask } from "./pipeline/ocr-task.ts";
import { OcrEngine } from "./ocr/engine.ts";
import { PpOcrEngine } from "./ocr/ppocr/engine.ts";
import type { TextEngine } from "./ocr/video-text.ts";
import { devOcrPaths, type OcrPaths } from "./ocr/paths.ts";
import { ModelRegistry } from "./models/registry.ts";
import { ModelService } from "./models/service.ts";
import { SystemStore } from "./system/store.ts";
import { SystemService } from "./system/service.ts";
import { IdleMemory } from "./system/idle-memory.ts";
import { CidrAllowList, type Resolver } from "./net/address-rules.ts";
import { WebhookStore } from "./webhooks/store.ts";
import { SecretBox } from "./webhooks/secret-box.ts";
import { WebhookDispatcher } from "./webhooks/dispatcher.ts";
import { WebhookService } from "./webhooks/service.ts";
import { CreditStore } from "./credits/store.ts";
import { CreditService } from "./credits/service.ts";
import { AccountDeletion } from "./accounts/deletion.ts";
import { CatalogQueryEmbedder, type QueryEmbedder } from "./search/embedder.ts";
import { createSearchDomain, type SearchDomain } from "./search/domain.ts";
import { SearchStore } from "./search/store.ts";
import { OcrSearchStore } from "./search/ocr-store.ts";
import { FeedbackStore } from "./search/feedback-store.ts";
import { VectorChangeStore } from "./search/vector-change-store.ts";
import type { MemoryIndexOptions } from "./search/memory-backend.ts";
import type { IndexWarmOptions } from "./search/index-warmer.ts";
import { StoreVectorBackend } from "./search/indexes.ts";
import { PgVectorBackend } from "./search/pgvector-backend.ts";
import { PgVectorStore } from "./search/pgvector-store.ts";
import { MediaService } from "./media-serving/service.ts";
import { MediaStore } from "./media-serving/store.ts";
import { mediaPaths } from "./media-serving/paths.ts";
import { AgentToolbox } from "./agent/toolbox.ts";
import { FrameGrabber } from "./agent/frames.ts";
import { sweepStaleSnapshots } from "./backup/layout.ts";
import { BackupService } from "./backup/service.ts";
import { BackupStore } from "./backup/store.ts";
import { isStorageError, StorageHealth } from "./core/storage.ts";
import { PlaybackStore } from "./playback/store.ts";
import { RenditionTask } from "./playback/renditions.ts";
import { ExportService } from "./playback/exports.ts";
import { sweepOrphanTools } from "./media/child-guard.ts";

/** How often a process that is not the leader tries to take the leader lock (the failover bound). */
const LEADER_RETRY_MS = 2000;

/** Native paths resolved by src/runtime (embedded in the binary, or node_modules in dev). */
export interface AppRuntime {
  vecExtension?: string;
  ffmpeg: string;
  ffprobe: string;
  inferenceWorkerFile: string;
  /** The embedded store's reader thread program (RuntimePaths); absent: long reads run on the main thread. */
  storeReaderFile?: string;
  /** Where the compiled binary extracted its native files; null in dev. */
  runtimeDir?: string | null;
  /** tesseract.js's worker, data and wasm (default: node_modules, as in dev). */
  ocr?: OcrPaths;
}

export interface AppOptions {
  /** DNS resolver for webhook and image_url targets (tests inject one; default: the system's). */
  resolve?: Resolver;
  runtime: AppRuntime;
  /** Which models are installed; defaults to the registry in the models folder. */
  models?: ModelCatalog;
  /** Encodes search queries; defaults to the active image-text model run in the worker pool. */
  queryEmbedder?: QueryEmbedder;
  logger?: Logger;
  now?: () => number;
  /** In-memory vector index tuning (tests lower trainAt to reach inverted lists with few rows). */
  vectorIndex?: MemoryIndexOptions;
  /**
   * Where search's nearest neighbours come from: the in-memory index (default), or sqlite-vec's
   * partitions for every scope (tests and benchmarks run the same searches against both).
   */
  vectorBackend?: "memory" | "sqlite-vec";
  /** Who this process is in PostgreSQL's pg_stat_activity ("vsearch serve", "vsearch doctor"). */
  applicationName?: string;
  /**
   * The in-memory index's warm-up after `start()`: slice length, page size, and how long a
   * search waits for it before answering 503 (tests shrink them to watch a load in progress).
   */
  indexWarm?: IndexWarmOptions;
  /**
   * Runs the database's clock ahead by this many ms for the task queue's leases and the webhook
   * schedule (store/sql.ts `dbNowMs`): how tests fast-forward lease expiry. 0 in production.
   */
  dbClockSkewMs?: () => number;
  /** This node's id (default: `<data-dir>/node-id`, made on first use; tests that play several nodes set it). */
  nodeId?: string;
  /**
   * Handed the app's domain event bus as soon as it exists (it is bound to the app's unit of
   * work). Tests that write index rows through the stores, as the pipeline does, publish the
   * pipeline's event on it.
   */
  onEventBus?: (bus: EventBus) => void;
  /** Uploads skip byte-identical files (default true); bench/upload-dedupe.ts measures the check's cost. */
  uploadDuplicateCheck?: boolean;
  /**
   * What this process runs (SPEC §13): `all` (default: the embedded server, HTTP and the task
   * queue), `serve` (HTTP, webhook delivery and the search index; claims no task), `worker` (the
   * task queue only: no HTTP, no index warm-up, no webhook delivery, no start-up sweep of media).
   */
  role?: NodeRole;
  /** A worker's task kinds (default: all of them); `job_concurrency` slots for ingest and OCR. */
  kinds?: readonly TaskKind[];
  /**
   * `vsearch secret adopt` only: record this node's cluster secret as the install's, replacing the
   * fingerprint of another (lost) one instead of refusing to start.
   */
  adoptSecret?: boolean;
}

/**
 * The parts createApp wires that callers must not drive directly: the database, the task queue,
 * the webhook dispatcher, the inference host (its worker pools), search internals, the signer.
 * A benchmark seam ONLY: bench/ scripts drive the task queue and the worker pools directly. Nothing
 * in src/ and no test reads `app.internals` (tests go through HTTP, services and stores over the
 * database file, test/helpers/stores.ts) — test/architecture checks both.
 */
export interface AppInternals {
  /** The store executor the app's stores are built on (benches build their own stores over it). */
  db: Executor;
  /** The task queue (ingest, OCR, renditions); `queue.start()` runs them without the rest of `start()`. */
  queue: LeaseQueue;
  dispatcher: WebhookDispatcher;
  inference: InferenceHost;
  /** The OCR engine (null with ocr_threads 0). */
  ocr: TextEngine | null;
  /** The idle memory passes (their RSS before/after). */
  idleMemory: IdleMemory;
  /** Search internals (index hooks, query encoder). */
  search: SearchDomain;
  signer: UrlSigner;
}

/**
 * What the CLI, `serve` and the tests get: services, the config and the lifecycle — not the
 * database, the task queue or the worker pools.
 */
export interface App {
  config: Config;
  logger: Logger;
  services: Services;
  metrics: Metrics;
  runtime: AppRuntime;
  /** `server` (Bun.serve's second argument) gives the socket peer address; absent in-process. */
  fetch(req: Request, server?: unknown): Response | Promise<Response>;
  /** The externally visible base URL, used in presigned links; set by `serve` once it listens. */
  setBaseUrl(url: string): void;
  /** Starts background work (job workers, webhook delivery). Only `serve` calls it. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** What createApp returns: the App plus the benchmark seam. Everything but bench/ takes it as an `App`. */
export interface BenchApp extends App {
  /** Benchmark seam only (bench/); see AppInternals. */
  internals: AppInternals;
}

/**
 * The composition root: the one place that wires stores, services and the HTTP app from a
 * config object. `serve`, every CLI command and the tests all go through here.
 */
export async function createApp(config: Config, opts: AppOptions): Promise<BenchApp> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const now = opts.now ?? Date.now;
  mkdirSync(config.dataDir, { recursive: true });
  // Stores get the handle; services and stages get transactions through the unit of work (store/unit-of-work.ts).
  assertConsistent(config);
  // The media's bucket, when s3_bucket is set: checked (endpoint, keys) before anything is opened.
  const bucket = bucketFromConfig(config);
  // Parsed once here, so a typo in VSEARCH_WEBHOOK_ALLOW_NETWORKS stops the start, not a delivery
  // (before the store opens, like every check of the settings: nothing to close when it fails).
  const allowNetworks = CidrAllowList.from(config.allowNetworks);
  // sqlite-vec is the embedded store's extension: on PostgreSQL vectors are pgvector columns.
  const vecExtension = config.databaseUrl ? undefined : opts.runtime.vecExtension;
  const dbFile = join(config.dataDir, "vsearch.db");
  const store = await openConfiguredStore({
    databaseUrl: config.databaseUrl,
    file: dbFile,
    vecExtension,
    // A search's full-text look-ups off the event loop (store/sqlite/read-threads.ts); one thread
    // beside the main one on 2 cores, up to 3 on bigger machines.
    readThreads: opts.runtime.storeReaderFile
      ? { workerFile: opts.runtime.storeReaderFile, threads: Math.max(1, Math.min(3, availableParallelism() - 1)) }
      : undefined,
    // No migration under a running serving node of another version (mixed versions: SCALE-OUT.md "Upgrade").
    pg: {
      applicationName: `vsearch ${opts.applicationName ?? "serve"}`,
      guard: { version: VERSION, freshMs: RUNNING_FOR_MS },
    },
    onError: (err) =>
      logger.error("after-commit callback failed", { err: err instanceof Error ? err.stack : String(err) }),
  });
  const { exec: db, uow } = store;

  let baseUrl = config.publicBaseUrl ?? localBaseUrl(config.host, config.port);
  // One secret for every node of the install (SPEC §13): presigned URLs and sealed webhook secrets.
  // A start refused here closes the store first: PostgreSQL's open pool would keep a CLI alive.
  let masterSecret: Buffer;
  try {
    const clusterSecret = loadClusterSecret(config);
    if (clusterSecret.origin !== "read")
      logger.info(`cluster secret ${clusterSecret.origin}`, { file: clusterSecret.file });
    if (clusterSecret.ignoredLocal)
      logger.warn("this data dir's secret.key differs from the cluster secret, which is used", {
        ignored: clusterSecret.ignoredLocal,
        file: clusterSecret.file,
      });
    masterSecret = clusterSecret.secret;
    // The database remembers the install's secret by its fingerprint: a node with another one
    // refuses here, before it signs or seals anything (signing/secret-fingerprint.ts).
    const fingerprints = new SecretFingerprintStore(db);
    if (opts.adoptSecret) await fingerprints.replace(secretFingerprint(masterSecret));
    else if ((await checkClusterSecret(fingerprints, masterSecret, clusterSecret.file)) === "recorded")
      logger.info("cluster secret fingerprint recorded", { file: clusterSecret.file });
  } catch (e) {
    await store.close();
    throw e;
  }
  // Links follow the origin each request came to (SPEC §10; the HTTP layer sets it); without a
  // request (CLI, MCP over stdio, background work): public_base_url, else the served address.
  const linkOrigin = new LinkOrigin();
  const signer = new UrlSigner(masterSecret, () => linkOrigin.current() ?? baseUrl, config.presignTtlSecs, now);

  const accountStore = new AccountStore(db);
  const accounts = new AccountService(accountStore);
  const apiKeys = new ApiKeyService(uow, new ApiKeyStore(db), accountStore, now);
  const users = new UserService(uow, accountStore, accounts, now);
  const auth = new AuthService(new SessionStore(db), accountStore, apiKeys, users, config.sessionTtlSecs, now);
  const playback = new PlaybackStore(db);
  const mediaUrls = mediaLinks(signer, playback);
  const nodeId = opts.nodeId ?? loadOrCreateNodeId(config.dataDir) ?? ephemeralNodeId();
  // Media on the media root (every node mounts it), or in a bucket with the media root as this
  // node's cache (s3_bucket); runtime, caches, snapshot and node id stay in the data dir.
  if (bucket) logger.info("media in an object store", { bucket: bucket.description });
  const mediaCacheBytes = config.mediaCacheMb === undefined ? undefined : config.mediaCacheMb * 1024 * 1024;
  const files = new VideoFiles(config.mediaRoot, nodeId, bucket, mediaCacheBytes);
  // Leases, claims and due times are on the database's clock (store/sql.ts dbNowMs), not this process's.
  const dbClock = { skewMs: opts.dbClockSkewMs ?? (() => 0) };
  const events = new EventStore(db, dbClock);
  const jobStore = new JobStore(db);
  // The disk uploads, sources and renditions fill: the media root (the data dir unless media_root is set).
  const storage = new StorageHealth(config.mediaRoot);
  // The one lease queue: ingest, OCR and renditions, claimed fairly across accounts
  // (docs/ARCHITECTURE.md "The task queue"). Its handlers are registered below.
  const taskStore = new TaskStore(db, dbClock);
  const role: NodeRole = opts.role ?? "all";
  // A `serve` node claims nothing; a worker claims its kinds while its models agree with the cluster's.
  const kinds: readonly TaskKind[] =
    role === "serve" ? [] : role === "worker" ? (opts.kinds ?? TASK_KINDS) : TASK_KINDS;
  const indexKinds = kinds.filter((k) => k !== "rendition");
  const queue: LeaseQueue = new LeaseQueue(taskStore, uow, {
    node: nodeId,
    lanes: [
      { name: "index", kinds: indexKinds, slots: config.jobConcurrency, when: () => nodes.accepts() },
      // Renditions yield the CPU to indexing: claimed only while this node indexes nothing (a
      // rendition-only worker has the node's slots for them).
      {
        name: "rendition",
        kinds: kinds.includes("rendition") ? ["rendition"] : [],
        slots: indexKinds.length ? 1 : config.jobConcurrency,
        when: () => queue.activeIn("index") === 0 && !storage.isFull() && nodes.accepts(),
      },
    ],
    leaseMs: config.queueLeaseSecs * 1000,
    maxRunningPerAccount: config.queueAccountMaxRunning,
    maxWaitingPerAccount: config.queueAccountMaxWaiting,
    logger,
    onStoreError: (e) => isStorageError(e) && storage.noteFull(),
    diskFull: () => storage.isFull(),
    // A task stopped because its video was deleted may have written into the folder after the
    // delete removed it (a re-created scratch dir, an encode's temp file): sweep it once it ended.
    afterTask: async (task) => {
      if (!(await videoStore.getById(task.video_id))) await files.remove(task.video_id);
    },
  });
  const webhookStore = new WebhookStore(db, dbClock);
  const secretBox = new SecretBox(masterSecret);
  const dispatcher = new WebhookDispatcher(uow, webhookStore, events, secretBox, {
    retryDelaysSecs: config.webhookRetryDelaysSecs,
    timeoutMs: config.webhookTimeoutMs,
    allowNetworks,
    resolve: opts.resolve,
    logger,
    version: VERSION,
    now,
  });
  // Domain events after commit; their subscribers are wired in one place, below ("Events").
  const bus = new EventBus(uow, (type, err) =>
    logger.error("event subscriber failed", { event: type, err: err instanceof Error ? err.stack : String(err) }),
  );
  opts.onEventBus?.(bus);
  // Several processes on one PostgreSQL database: the events others react to cross processes
  // (LISTEN/NOTIFY inside the publishing transaction; a catch-up after a reconnect: events/cluster.ts).
  const cluster =
    store.kind === "postgres"
      ? new ClusterEvents(
          db,
          bus,
          {
            changedAfter: async (version) => (await vectorChanges.after(version)).map((c) => c.video_id),
            gone: async () => {
              const have = new Set(await videoStore.allIds());
              return search.indexes.heldVideoIds().filter((id) => !have.has(id));
            },
            wake: () => {
              queue.wake();
              dispatcher.wake();
            },
          },
          logger,
        )
      : null;
  if (cluster) bus.relayTo(cluster);
  const credits = new CreditService(
    uow,
    new CreditStore(db),
    events,
    {
      perMinute: config.creditsPerMinute,
      perSearch: config.creditsPerSearch,
      lowThreshold: config.creditsLowThreshold,
    },
    bus,
  );
  const indexStore = new IndexStore(db, Boolean(vecExtension));
  const vectorChanges = new VectorChangeStore(db);
  const videoStore = new VideoStore(db);
  // The one owner of a video's derived content: the pipeline writes through it, deletions delete through it.
  const content = new VideoContent(uow, indexStore, files, bus);
  const videos = new VideoService(uow, videoStore, jobStore, events, indexStore, files, mediaUrls, content, queue);
  const collections = new CollectionService(
    new CollectionStore(db),
    { purgeVideos: (accountId, ids) => videos.purgeVideos(accountId, ids) },
    mediaUrls,
  );
  // Every decode runs under max_video_pixels (media/bounds.ts).
  const bins = { ffmpeg: opts.runtime.ffmpeg, ffprobe: opts.runtime.ffprobe, maxPixels: config.maxVideoPixels };
  const models: ModelCatalog = opts.models ?? new ModelRegistry(config.modelsDir);
  // After the models (and, below, the OCR workers) unload on idle, memory goes back to the OS (idleMemory, below).
  const inference = new InferenceHost(
    config,
    opts.runtime.inferenceWorkerFile,
    models,
    logger,
    opts.runtime.runtimeDir ?? null,
    () => idleMemory.schedule(),
  );
  const search = createSearchDomain({
    stores: {
      search: new SearchStore(db),
      ocr: new OcrSearchStore(db),
      feedback: new FeedbackStore(db),
      changes: vectorChanges,
    },
    indexDir: join(config.dataDir, "index"),
    vectorMemoryBudgetBytes: memoryBudgetBytes(config.vectorMemoryBudget),
    uow,
    vectorCacheBytes: config.searchCacheMb * 1024 * 1024,
    vectorIndex: opts.vectorIndex,
    warm: opts.indexWarm,
    files,
    videos,
    collections,
    links: mediaUrls,
    ffmpeg: opts.runtime.ffmpeg,
    allowNetworks: config.allowNetworks,
    embedder: opts.queryEmbedder ?? new CatalogQueryEmbedder(models, () => inference.get()),
    speechModel: () => models.active("speech") !== null,
    // A search is refused unless the whole search can be paid (the balance never goes negative).
    credits: {
      assertCanSpend: async (a) => await credits.assertCanSearch(a),
      chargeSearch: async (a) => await credits.chargeSearch(a),
    },
    logger,
    now,
  });
  if (opts.vectorBackend === "sqlite-vec") search.indexes.useBackend(new StoreVectorBackend(new SearchStore(db), 0));
  // Stateless servers: nearest neighbours from pgvector's HNSW indexes, no in-memory index to warm or snapshot.
  if (config.vectorBackend === "pgvector")
    search.indexes.useBackend(new PgVectorBackend(new SearchStore(db), new PgVectorStore(db), { logger }));
  // Worker threads start on the first frame with text; at most ocr_threads of them (each one core).
  // They end after the same idle time as the models (a tesseract worker holds ~25 MB: wasm memory
  // and a JS heap; a PP-OCR worker its two ONNX sessions).
  const ocrPaths = opts.runtime.ocr ?? devOcrPaths();
  const ocrIdle = {
    workers: config.ocrThreads,
    idleCloseMs: config.modelIdleUnloadSecs * 1000,
    onIdleClosed: () => idleMemory.schedule(),
  };
  const ocr: TextEngine | null =
    config.ocrThreads === 0
      ? null
      : config.ocrEngine === "ppocr"
        ? new PpOcrEngine({ workerFile: ocrPaths.ppocr.workerFile, files: ocrPaths.ppocr, ...ocrIdle })
        : new OcrEngine({ paths: ocrPaths, ...ocrIdle });
  const renditions = new RenditionTask(playback, files, bins, queue, { logger, now });
  const jobs = new JobService(
    jobStore,
    uow,
    videoJobHooks({
      videos: videoStore,
      files,
      bus,
      charge: async (accountId, durationSecs) => await credits.chargeIndexing(accountId, durationSecs),
      queueRendition: async (videoId, accountId) => await renditions.queue(videoId, accountId),
    }),
    events,
    queue,
  );
  const pipelineDeps = {
    videos: videoStore,
    jobs,
    tasks: queue,
    content,
    files,
    bins,
    models,
    pool: () => inference.get(),
    ocr,
    ocrRunsHere: kinds.includes("ocr"),
    ocrLimits: { framesPerMinute: config.ocrMaxFramesPerMinute, budgetSecsPerMinute: config.ocrBudgetSecsPerMinute },
    batchSize: config.batchSize,
    speechMaxTokens: config.speechMaxTokens,
    frameIntervalSecs: config.frameIntervalSecs,
    frameLoopFilter: config.frameLoopFilter,
    // A long-GOP file's full decode runs as this many ffmpeg processes (media/split-decode.ts): the
    // cores, shared among the jobs that may run at once.
    frameDecodeProcesses:
      config.frameDecodeProcesses ||
      Math.max(1, Math.floor(availableParallelism() / Math.max(1, config.jobConcurrency))),
    logger,
  };
  queue.handle("ingest", new IngestPipeline(pipelineDeps));
  queue.handle("ocr", new OcrTask(pipelineDeps));
  queue.handle("rendition", renditions);
  const uploads = new UploadService(
    files,
    collections,
    videos,
    ffprobeSniffer(bins),
    config.maxUploadBytes,
    async (accountId) => await credits.assertCanSpend(accountId),
    bus,
    async (accountId) => await queue.assertRoom(accountId),
    { duplicateCheck: opts.uploadDuplicateCheck },
  );
  const webhooks = new WebhookService(
    uow,
    webhookStore,
    events,
    accountStore,
    secretBox,
    { allowNetworks, resolve: opts.resolve },
    bus,
    now,
  );

  // Events: every reaction to a committed change, in one place (docs/ARCHITECTURE.md "Events").
  // A worker keeps no search index: its finished videos reach the servers' through the store.
  if (role !== "worker") bus.subscribe("videos.deleted", async (e) => await search.indexes.onVideosDeleted(e.videoIds));
  // A deleted video's tasks (ingest, OCR, rendition), clip encodes and frame grabs stop (their ffmpegs are killed).
  bus.subscribe("videos.deleted", (e) => {
    queue.cancelVideos(e.videoIds);
    exports.onVideosDeleted(e.videoIds);
    frames.onVideosDeleted(e.videoIds);
  });
  if (role !== "worker")
    bus.subscribe("video.content_changed", async (e) => await search.indexes.onVideoIndexed(e.videoId));
  bus.subscribe("video.accepted", () => {
    queue.wake();
    dispatcher.wake(); // video.created is in the outbox
  });
  // Media in a bucket: every node drops its cached copy of a deleted video (the deleting node removed the objects).
  if (bucket) bus.subscribe("videos.deleted", (e) => e.videoIds.forEach((id) => files.dropCached(id)));
  bus.subscribe("job.retried", () => queue.wake());
  bus.subscribe("outbox.written", () => dispatcher.wake());
  const frames = new FrameGrabber(bins);
  const accountDeletion = new AccountDeletion(uow, accountStore, events, webhookStore, dispatcher, videos);
  const media = new MediaService(new MediaStore(db), files, signer);
  const exports = new ExportService(
    videos,
    playback,
    files,
    bins,
    {
      clipUrl: (videoId, file) => {
        const url = signer.sign(mediaPaths.clip(videoId, file));
        return { url, expiresAt: new Date(Number(new URL(url).searchParams.get("expires")) * 1000).toISOString() };
      },
    },
    { clipMaxSecs: config.clipMaxSecs, clipCacheBytes: config.clipCacheMb * 1024 * 1024 },
  );
  // Imports and pulls are load-checked for real: the staged model runs once in the worker pool,
  // the code path the server uses. `text` models have no runtime loader yet (layout check only).
  const modelService = new ModelService({
    modelsDir: config.modelsDir,
    verifyLoad: async (dir, role, dtype) => {
      if (role === "text") return;
      const pool = await inference.get();
      await pool.selfTest(dir, { dtype });
    },
  });
  const systemStore = new SystemStore(db);
  // This process in the node registry (heartbeat, device, models; a worker's model check).
  const nodes = new NodeRegistry(
    new NodeStore(db, dbClock),
    models,
    { id: nodeId, role, kinds, concurrency: config.jobConcurrency },
    { device: async () => (await inference.device()).device, logger },
  );
  const storeBackend: StoreBackendInfo =
    store.kind === "postgres" ? describePostgres(config.databaseUrl!, store.server) : { kind: "sqlite", file: dbFile };
  const system = new SystemService(systemStore, models, inference, storeBackend, () => search.indexes.backendIndexes());
  // Idle memory: once the models or the OCR workers have unloaded and nothing is in flight, let go
  // of what rebuilds cheaply, collect, trim glibc's arenas, and drop the code pages of the
  // libraries only the workers ran (docs/OPERATIONS.md; BENCHMARKS.md, "Idle memory").
  const idleMemory = new IdleMemory({
    busy: () => queue.active > 0 || inference.busy || (ocr?.busy ?? false),
    release: [
      {
        name: "search caches",
        run: async () => {
          search.indexes.releaseCaches(config.modelIdleUnloadSecs * 1000);
        },
      },
      { name: "sqlite page cache", run: async () => await systemStore.shrinkMemory() },
    ],
    libraries: {
      path: /\/[^/]*(onnxruntime|vips|sharp)[^/]*$/,
      unused: () => !inference.started && (ocr?.running ?? 0) === 0,
    },
    logger,
  });
  const services: Services = {
    accounts,
    users,
    setup: new SetupService(uow, accountStore, now),
    auth,
    apiKeys,
    collections,
    videos,
    uploads,
    jobs,
    search: search.search,
    searchFeedback: search.feedback,
    moments: search.moments,
    media,
    exports,
    webhooks,
    credits,
    accountDeletion,
    models: modelService,
    system,
    nodes,
    backup: new BackupService(new BackupStore(db, vecExtension), {
      dataDir: config.dataDir,
      mediaRoot: config.mediaRoot,
      secretFile: clusterSecretFile(config),
      modelsDir: config.modelsDir,
      vecExtension,
      databaseUrl: config.databaseUrl,
      version: VERSION,
      bucket: bucket ? { store: bucket, description: bucket.description } : null,
    }),
    agent: new AgentToolbox({
      collections,
      videos,
      jobs,
      search: search.search,
      moments: search.moments,
      exports,
      media,
      files,
      frames,
    }),
  };

  // Rate-limit windows: in this process on the embedded store; shared by every server on PostgreSQL.
  const limiter =
    store.kind === "postgres"
      ? new DbRateLimiter(db, masterSecret, config.rateLimits, now)
      : new RateLimiter(config.rateLimits, now, { maxClients: config.rateLimitMaxClients });
  // Cluster-wide duties run on one process: the holder of the leader advisory lock (system/leader.ts).
  const leader = new LeaderElection(
    store.kind === "postgres"
      ? async () => await acquireAdvisoryLock(store.pool, ADVISORY_LOCKS.leader, { wait: false })
      : null,
    {
      intervalMs: LEADER_RETRY_MS,
      logger,
      duties:
        limiter instanceof DbRateLimiter
          ? [{ name: "prune rate windows", everyMs: 60_000, run: async () => void (await limiter.prune()) }]
          : [],
    },
  );
  // Several processes share a PostgreSQL database: each one's samples say which node they are from.
  const metrics = new Metrics(config.databaseUrl ? { instance: nodeId } : {});
  registerAppGauges(metrics, {
    // Cluster-wide counts: from the leader only, so a sum over instances counts each job once.
    jobCounts: async () => (leader.isLeader ? await jobStore.countsByStatus() : []),
    taskCounts: async () => (leader.isLeader ? await taskStore.countsByState() : []),
    isLeader: () => leader.isLeader,
    searchIndexRows: () => search.indexes.memoryRows,
    searchIndexWarm: () => search.indexes.warmStatus,
    inferenceRunning: () => inference.started,
    ocrWorkers: () => ocr?.running ?? 0,
    idleMemoryPasses: () => idleMemory.passCount,
  });
  let closing = false;
  const http = createHttpApp({
    config,
    auth,
    limiter,
    services,
    logger,
    metrics,
    version: VERSION,
    storage,
    links: linkOrigin,
    ready: readiness({
      pingDatabase: async () => await systemStore.ping(),
      storage,
      searchIndexStatus: () => search.indexes.statusLine(),
      closing: () => closing,
    }),
  });

  return {
    config,
    logger,
    services,
    metrics,
    runtime: opts.runtime,
    internals: { db, queue, dispatcher, inference, ocr, idleMemory, search, signer },
    fetch: (req, server) => http.fetch(req, server),
    setBaseUrl: (url) => {
      baseUrl = config.publicBaseUrl ?? url.replace(/\/$/, "");
    },
    start: async () => {
      // No lease is released at start: they run out (another node may hold them). Only the tasks
      // this node's previous incarnation held (same data dir, and the instance lock says it is
      // gone) are queued again at once. On a full disk even that write may fail; they then wait
      // for their leases like any other.
      // Registered (and a worker's models checked) before the first claim. On a full disk the
      // row cannot be written: the node still starts (its heartbeat registers it later).
      try {
        await nodes.start();
      } catch (e) {
        if (!isStorageError(e)) throw e;
        storage.noteFull();
        logger.warn("could not register this node: disk full", { err: (e as Error).message });
      }
      let released = 0;
      try {
        released = await queue.start();
      } catch (e) {
        if (!isStorageError(e)) throw e;
        storage.noteFull();
        logger.warn("could not take back this node's tasks: disk full", { err: (e as Error).message });
      }
      // Before the warm-up: what commits from here on is notified; what committed before, it reads.
      // Workers listen too: another node's deletion stops their tasks for that video at once.
      if (cluster && store.kind === "postgres") await cluster.start((ch, h) => listen(store.pool, ch, h));
      if (role === "worker") {
        // No HTTP, no index, no webhook delivery, and the media is the servers' to sweep: only
        // this data dir's own leftovers (ffmpegs a crashed worker left running).
        const killed = sweepOrphanTools(bins, config.dataDir);
        if (killed || released)
          logger.info("recovered after restart", { tasks_requeued: released, orphan_tools_killed: killed });
        return;
      }
      const swept = {
        // ffmpeg/ffprobe a crashed server left running on this data dir (media/child-guard.ts).
        orphan_tools_killed: sweepOrphanTools(bins, config.dataDir),
        // Tasks still running are another node's (this node's own were given back just above):
        // the temp files in their videos' folders are being written now.
        // On PostgreSQL other nodes may share the media root: what they may be writing is left to them.
        ...(await files.sweepOrphans(
          new Set(await videoStore.allIds()),
          new Set((await taskStore.list()).filter((t) => t.state === "running").map((t) => t.video_id)),
          {
            sharedGraceMs: store.kind === "postgres" ? SHARED_ROOT_GRACE_MS : 0,
            hasRow: async (id) => (await videoStore.getById(id)) !== null,
          },
        )),
        backup_snapshots: sweepStaleSnapshots(config.dataDir),
      };
      if (Object.values(swept).some(Boolean) || released) {
        logger.info("recovered after restart", { tasks_requeued: released, ...swept });
      }
      await leader.start();
      dispatcher.start();
      // Every account's vectors into the in-memory index, in slices between requests (index-warmer.ts).
      await search.indexes.startWarming();
    },
    close: async () => {
      closing = true;
      await leader.stop();
      await cluster?.stop();
      search.indexes.stopWarming(); // before the store closes: no page is read after this
      await queue.stop();
      await nodes.stop();
      await dispatcher.stop();
      // nothing writes vectors any more; the store is still open (a worker has no index to save)
      if (role !== "worker") await search.indexes.saveSnapshot();
      idleMemory.close();
      await inference.close();
      await ocr?.close();
      await bus.idle(); // reactions to the last changes read the store: let them finish first
      await store.close();
    },
  };
}
