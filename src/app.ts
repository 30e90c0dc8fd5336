import type { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Config } from "./config/config.ts";
import { createLogger, type Logger } from "./core/logger.ts";
import { openDatabase } from "./store/database.ts";
import { AccountStore } from "./accounts/store.ts";
import { AccountService } from "./accounts/service.ts";
import { ApiKeyStore } from "./api-keys/store.ts";
import { ApiKeyService } from "./api-keys/service.ts";
import { SessionStore } from "./auth/store.ts";
import { AuthService } from "./auth/service.ts";
import { CollectionStore } from "./collections/store.ts";
import { CollectionService } from "./collections/service.ts";
import { createHttpApp } from "./http/app.ts";
import { RateLimiter } from "./http/rate-limit.ts";
import type { AppEnv } from "./http/types.ts";
import { Metrics } from "./observability/metrics.ts";
import type { Services } from "./services.ts";
import { loadOrCreateSecret, UrlSigner } from "./signing/url-signer.ts";
import { VERSION } from "./version.ts";
import { EventStore } from "./events/store.ts";
import { IndexStore } from "./indexing/store.ts";
import { JobStore } from "./jobs/store.ts";
import { JobService } from "./jobs/service.ts";
import { VideoFiles } from "./videos/files.ts";
import { VideoStore } from "./videos/store.ts";
import { VideoService } from "./videos/service.ts";
import { UploadService } from "./upload/service.ts";
import { ffprobeSniffer } from "./upload/sniffer.ts";
import { registerUploadRoutes } from "./upload/routes.ts";
import { registerVideoRoutes } from "./videos/routes.ts";
import { registerJobRoutes } from "./jobs/routes.ts";
import { JobRunner } from "./jobs/runner.ts";
import type { ModelCatalog } from "./pipeline/deps.ts";
import { InferenceHost } from "./pipeline/inference-host.ts";
import { IngestPipeline } from "./pipeline/ingest.ts";
import { ModelRegistry } from "./models/registry.ts";
import { CidrAllowList, type Resolver } from "./net/address-rules.ts";
import { WebhookStore } from "./webhooks/store.ts";
import { SecretBox } from "./webhooks/secret-box.ts";
import { WebhookDispatcher } from "./webhooks/dispatcher.ts";
import { WebhookService } from "./webhooks/service.ts";
import { registerWebhookRoutes } from "./webhooks/routes.ts";
import { CreditStore } from "./credits/store.ts";
import { CreditService } from "./credits/service.ts";
import { AccountDeletion } from "./accounts/deletion.ts";
import { CatalogQueryEmbedder, type QueryEmbedder } from "./search/embedder.ts";
import { createSearchDomain, type SearchDomain } from "./search/domain.ts";
import type { MemoryIndexOptions } from "./search/memory-backend.ts";
import { registerSearchRoutes } from "./search/routes.ts";
import { MediaService } from "./media-serving/service.ts";
import { MediaStore } from "./media-serving/store.ts";
import { mediaPaths } from "./media-serving/paths.ts";
import { registerMediaRoutes } from "./media-serving/routes.ts";

/** Native paths resolved by src/runtime (embedded in the binary, or node_modules in dev). */
export interface AppRuntime {
  vecExtension?: string;
  ffmpeg: string;
  ffprobe: string;
  inferenceWorkerFile: string;
  /** Where the compiled binary extracted its native files; null in dev. */
  runtimeDir?: string | null;
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
}

export interface App {
  config: Config;
  logger: Logger;
  db: Database;
  services: Services;
  metrics: Metrics;
  http: OpenAPIHono<AppEnv>;
  signer: UrlSigner;
  runner: JobRunner;
  dispatcher: WebhookDispatcher;
  inference: InferenceHost;
  models: ModelCatalog;
  runtime: AppRuntime;
  /** Search internals (index hooks, query encoder) for the CLI, tests and benches. */
  search: SearchDomain;
  fetch(req: Request): Response | Promise<Response>;
  /** The externally visible base URL, used in presigned links; set by `serve` once it listens. */
  setBaseUrl(url: string): void;
  /** Starts background work (job workers, webhook delivery). Only `serve` calls it. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The composition root: the one place that wires stores, services and the HTTP app from a
 * config object. `serve`, every CLI command and the tests all go through here.
 */
export async function createApp(config: Config, opts: AppOptions): Promise<App> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const now = opts.now ?? Date.now;
  mkdirSync(config.dataDir, { recursive: true });
  const db = openDatabase(join(config.dataDir, "vsearch.db"), { vecExtension: opts.runtime.vecExtension });

  let baseUrl = config.publicBaseUrl ?? `http://${config.host}:${config.port}`;
  const masterSecret = loadOrCreateSecret(join(config.dataDir, "secret.key"));
  const signer = new UrlSigner(masterSecret, () => baseUrl, config.presignTtlSecs, now);
  // Parsed once here, so a typo in VSEARCH_WEBHOOK_ALLOW_NETWORKS stops the start, not a delivery.
  const allowNetworks = CidrAllowList.from(config.allowNetworks);

  const accountStore = new AccountStore(db);
  const accounts = new AccountService(accountStore);
  const apiKeys = new ApiKeyService(new ApiKeyStore(db), accountStore, now);
  const auth = new AuthService(new SessionStore(db), accountStore, apiKeys, config.sessionTtlSecs, now);
  const mediaUrls = {
    posterUrl: (videoId: string) => signer.sign(`/media/videos/${videoId}/poster.jpg`),
    playbackUrl: (videoId: string) => signer.sign(`/media/videos/${videoId}/source`),
  };
  const files = new VideoFiles(config.dataDir);
  const events = new EventStore(db);
  const jobStore = new JobStore(db);
  const webhookStore = new WebhookStore(db);
  const secretBox = new SecretBox(masterSecret);
  const dispatcher = new WebhookDispatcher(db, webhookStore, events, secretBox, {
    retryDelaysSecs: config.webhookRetryDelaysSecs,
    timeoutMs: config.webhookTimeoutMs,
    allowNetworks,
    resolve: opts.resolve,
    logger,
    version: VERSION,
    now,
  });
  const credits = new CreditService(db, new CreditStore(db), events, {
    perMinute: config.creditsPerMinute,
    perSearch: config.creditsPerSearch,
    lowThreshold: config.creditsLowThreshold,
  }, () => dispatcher.wake());
  const indexStore = new IndexStore(db, Boolean(opts.runtime.vecExtension));
  const videoStore = new VideoStore(db);
  // Deleted videos leave the search indexes (the search domain is built below; called only later).
  const videos = new VideoService(db, videoStore, jobStore, events, indexStore, files, mediaUrls, (ids) => search.indexes.onVideosDeleted(ids));
  const collections = new CollectionService(
    new CollectionStore(db),
    { purgeVideos: (accountId, ids) => videos.purgeVideos(accountId, ids) },
    mediaUrls,
  );
  const bins = { ffmpeg: opts.runtime.ffmpeg, ffprobe: opts.runtime.ffprobe };
  const models: ModelCatalog = opts.models ?? new ModelRegistry(config.modelsDir);
  const inference = new InferenceHost(config, opts.runtime.inferenceWorkerFile, models, logger, opts.runtime.runtimeDir ?? null);
  const search = createSearchDomain({
    db,
    vectorCacheBytes: config.searchCacheMb * 1024 * 1024,
    vectorIndex: opts.vectorIndex,
    files,
    videos,
    collections,
    links: { ...mediaUrls, shotThumbnailUrl: (videoId, n) => signer.sign(mediaPaths.shot(videoId, n)) },
    ffmpeg: opts.runtime.ffmpeg,
    allowNetworks: config.allowNetworks,
    embedder: opts.queryEmbedder ?? new CatalogQueryEmbedder(models, () => inference.get()),
    credits,
    logger,
    now,
  });
  const pipeline = new IngestPipeline({
    db,
    videos: videoStore,
    jobs: jobStore,
    events,
    index: indexStore,
    files,
    bins,
    models,
    pool: () => inference.get(),
    batchSize: config.batchSize,
    speechMaxTokens: config.speechMaxTokens,
    logger,
    onIndexed: (videoId) => search.indexes.onVideoIndexed(videoId),
    onCompleted: (accountId, durationSecs) => credits.chargeIndexing(accountId, durationSecs),
  });
  const runner = new JobRunner(jobStore, pipeline, { concurrency: config.jobConcurrency, logger, now });
  const uploads = new UploadService(files, collections, videos, ffprobeSniffer(bins), config.maxUploadBytes, (accountId) => credits.assertCanSpend(accountId), () => {
    runner.wake();
    dispatcher.wake();
  });
  const webhooks = new WebhookService(db, webhookStore, events, accountStore, secretBox, { allowNetworks, resolve: opts.resolve }, () => dispatcher.wake(), now);
  const accountDeletion = new AccountDeletion(db, accountStore, events, webhookStore, dispatcher, videos);
  const jobs = new JobService(jobStore);
  const media = new MediaService(new MediaStore(db), files, signer);
  const services: Services = {
    accounts, auth, apiKeys, collections, videos, uploads, jobs,
    search: search.search, searchFeedback: search.feedback, moments: search.moments, media,
    webhooks, credits, accountDeletion,
  };

  const metrics = new Metrics();
  metrics.gauge("vsearch_jobs", "Indexing jobs by status", () =>
    jobStore.countsByStatus().map((r) => ({ labels: { status: r.status }, value: r.n })),
  );
  let closing = false;
  const http = createHttpApp({
    config,
    auth,
    limiter: new RateLimiter(config.rateLimits, now),
    services,
    logger,
    metrics,
    version: VERSION,
    routeModules: [registerUploadRoutes, registerVideoRoutes, registerJobRoutes, registerSearchRoutes, registerMediaRoutes, registerWebhookRoutes],
    ready: () => {
      const checks: Record<string, string> = {};
      try {
        db.query("SELECT 1").get();
        checks.database = "ok";
      } catch (e) {
        checks.database = (e as Error).message;
      }
      checks.shutdown = closing ? "in progress" : "no";
      return { ok: checks.database === "ok" && !closing, checks };
    },
  });

  return {
    config,
    logger,
    db,
    services,
    metrics,
    http,
    signer,
    fetch: (req) => http.fetch(req),
    setBaseUrl: (url) => {
      baseUrl = config.publicBaseUrl ?? url.replace(/\/$/, "");
    },
    runner,
    dispatcher,
    inference,
    models,
    runtime: opts.runtime,
    search,
    start: async () => {
      // The instance lock is held: leases of a previous (crashed) server can be released now.
      const released = jobStore.releaseAllLeases();
      const swept = files.sweepOrphans(new Set(videoStore.allIds()));
      if (released || swept.tmp || swept.videos) logger.info("recovered after restart", { jobs_requeued: released, ...swept });
      runner.start();
      dispatcher.start();
    },
    close: async () => {
      closing = true;
      await runner.stop();
      await dispatcher.stop();
      await inference.close();
      db.close();
    },
  };
}
