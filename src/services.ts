import type { AccountService } from "./accounts/service.ts";
import type { UserService } from "./accounts/users.ts";
import type { SetupService } from "./accounts/setup.ts";
import type { ApiKeyService } from "./api-keys/service.ts";
import type { AuthService } from "./auth/service.ts";
import type { CollectionService } from "./collections/service.ts";
import type { JobService } from "./jobs/service.ts";
import type { UploadService } from "./upload/service.ts";
import type { VideoService } from "./videos/service.ts";
import type { SearchService } from "./search/service.ts";
import type { FeedbackService } from "./search/feedback-service.ts";
import type { MomentService } from "./search/moment-service.ts";
import type { MediaService } from "./media-serving/service.ts";
import type { WebhookService } from "./webhooks/service.ts";
import type { CreditService } from "./credits/service.ts";
import type { AccountDeletion } from "./accounts/deletion.ts";
import type { ModelService } from "./models/service.ts";
import type { SystemService } from "./system/service.ts";
import type { AgentToolbox } from "./agent/toolbox.ts";
import type { BackupService } from "./backup/service.ts";
import type { ExportService } from "./playback/exports.ts";
import type { NodeRegistry } from "./nodes/registry.ts";

/** Everything routes and CLI commands may call. Built once by createApp. */
export interface Services {
  accounts: AccountService;
  /** The people of an account: invite, role, reset, remove (issue 22). */
  users: UserService;
  /** First run in the browser: the setup link's token creates the first account. */
  setup: SetupService;
  auth: AuthService;
  apiKeys: ApiKeyService;
  collections: CollectionService;
  videos: VideoService;
  uploads: UploadService;
  jobs: JobService;
  search: SearchService;
  searchFeedback: FeedbackService;
  moments: MomentService;
  media: MediaService;
  /** Clip and transcript exports (SPEC §11). */
  exports: ExportService;
  webhooks: WebhookService;
  credits: CreditService;
  accountDeletion: AccountDeletion;
  /** Install, verify, export and activate models (load checks run in the app's worker pool). */
  models: ModelService;
  /** The models, device and store size this instance runs with (doctor, reindex). */
  system: SystemService;
  /** The agent tools (SPEC §9) behind /v1/agent/*, /v1/mcp and `vsearch mcp`. */
  agent: AgentToolbox;
  /** `vsearch backup` and `vsearch check` (SPEC §11). */
  backup: BackupService;
  /** The node registry (issue 26): every serve and worker process, its heartbeat and what it runs; this node's refusal. */
  nodes: Pick<NodeRegistry, "list" | "refused">;
}
