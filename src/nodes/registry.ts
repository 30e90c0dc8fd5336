import { hostname } from "node:os";
import type { Logger } from "../core/logger.ts";
import type { ModelCatalog } from "../models/roles.ts";
import { VERSION } from "../version.ts";
import type { NodeRole, NodeRow, NodeStore } from "./store.ts";

/** The models whose vectors and transcripts must agree across a cluster: what servers query with. */
const COMPARED_ROLES = ["image-text", "speech"] as const;
type NodeModels = Record<(typeof COMPARED_ROLES)[number], string | null>;

export interface NodeInfo {
  id: string;
  role: NodeRole;
  kinds: readonly string[];
  concurrency: number;
}

/** The heartbeat period (default); a node silent for three of them is `lost`. */
export const DEFAULT_HEARTBEAT_MS = 10_000;
/** How long a node counts as running after its last heartbeat (default period). */
export const RUNNING_FOR_MS = 3 * DEFAULT_HEARTBEAT_MS;

export interface NodeRegistryOptions {
  /** Where inference runs (`InferenceHost.device()`: what doctor reports). */
  device: () => Promise<string>;
  logger: Logger;
  /** Heartbeat period; a node whose last beat is older than 3 of these is listed `lost`. */
  heartbeatMs?: number;
}

/** A node as `vsearch nodes` and GET /v1/system/nodes show it. */
export interface NodeView {
  id: string;
  role: NodeRole;
  status: "running" | "stopped" | "lost";
  kinds: string[];
  concurrency: number;
  device: string;
  models: NodeModels;
  version: string;
  host: string;
  pid: number;
  started_at: string;
  last_heartbeat: string;
  heartbeat_age_secs: number;
  refused: string | null;
}

/**
 * A serving node (`serve`, `all`) refused at start: a serving node of another vsearch version is
 * running on the same database (mixed versions are refused; docs/SCALE-OUT.md, "Upgrade").
 */
export class MixedVersionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MixedVersionsError";
  }
}

/**
 * This process's entry in the node registry (issue 26): it registers at start (node id, role,
 * kinds, device, active models, version, host and pid), renews its heartbeat on its own timer, and
 * — on a worker — decides whether the worker may claim at all: a worker of another vsearch version
 * than the running servers', or whose active image-text or speech model differs from theirs,
 * writes rows (vectors, transcripts) no server reads or queries as it expects, so it claims nothing
 * and says why (in its log and in the registry) until they agree. A serving node does not start
 * beside a running serving node of another version (`MixedVersionsError`). Only running nodes
 * (a fresh heartbeat) count for versions: stopped and lost rows are history, never a block.
 */
export class NodeRegistry {
  private timer: ReturnType<typeof setInterval> | null = null;
  private refusal: string | null = null;
  private registered = false;
  private running = false;
  private beating: Promise<void> | null = null;
  readonly heartbeatMs: number;

  constructor(
    private readonly store: NodeStore,
    private readonly models: ModelCatalog,
    private readonly info: NodeInfo,
    private readonly opts: NodeRegistryOptions,
  ) {
    this.heartbeatMs = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  }

  /** Whether this node may claim tasks now (false: its models differ from the cluster's). */
  accepts(): boolean {
    return this.refusal === null;
  }

  /** Why it claims nothing, or null. */
  get refused(): string | null {
    return this.refusal;
  }

  /**
   * Registers this node and checks its version and models; then beats every `heartbeatMs`.
   * A serving node beside a running serving node of another version throws MixedVersionsError
   * and registers nothing.
   */
  async start(): Promise<void> {
    if (this.info.role !== "worker") await this.refuseMixedVersions();
    this.running = true;
    this.timer ??= setInterval(() => {
      // One at a time: a slow database must not pile them up.
      this.beating ??= this.beat().finally(() => (this.beating = null));
    }, this.heartbeatMs);
    await this.register();
  }

  private async register(): Promise<void> {
    await this.check(); // its refusal (if any) is in the row from the first write
    await this.store.register({
      id: this.info.id,
      role: this.info.role,
      kinds: JSON.stringify(this.info.kinds),
      concurrency: this.info.concurrency,
      device: await this.opts.device().catch(() => "unknown"),
      models: JSON.stringify(this.ownModels()),
      version: VERSION,
      host: hostname(),
      pid: process.pid,
      refused: this.refusal,
    });
    this.registered = true;
  }

  /** One heartbeat: the model check again (servers may have changed model), then the row. */
  private async beat(): Promise<void> {
    if (!this.running) return;
    try {
      if (!this.registered) return await this.register(); // its first write failed (a full disk)
      await this.check();
      // A row deleted under it (an operator's clean-up): register again.
      if (!(await this.store.beat(this.info.id, this.refusal))) await this.register();
    } catch (e) {
      // The database is away: the next beat tries again (the task queue rides it out on its own).
      this.opts.logger.warn("node heartbeat failed", { err: (e as Error)?.message });
    }
  }

  /**
   * A worker's models against the cluster's: the serving nodes (`serve`, `all`) that are running,
   * or, when none is, the one that beat last. Serving nodes define the cluster (they answer
   * queries with their models) and are not checked; nor is a worker of a cluster with no server yet.
   */
  private async check(): Promise<void> {
    if (this.info.role !== "worker") return;
    const { now, nodes } = await this.store.list();
    const servers = nodes.filter((n) => n.role !== "worker" && n.id !== this.info.id);
    const running = servers.filter((n) => this.statusOf(n, now) === "running");
    const reference = running.length ? running : servers.sort((a, b) => b.heartbeat_at - a.heartbeat_at).slice(0, 1);
    const mine = this.ownModels();
    let why: string | null = null;
    // Versions first, against running servers only: a stopped or lost server of the old version
    // (an upgrade under way) must not keep a new worker idle.
    const other = running.find((n) => n.version !== VERSION);
    if (other)
      why =
        `this worker's vsearch version (${VERSION}) differs from the cluster's (${other.version}, on ${other.role} node ${other.id} at ${other.host}): ` +
        `mixed versions are refused; run vsearch ${other.version} here, or upgrade every node (docs/SCALE-OUT.md, "Upgrade"), then restart the worker`;
    for (const server of why ? [] : reference) {
      const theirs = JSON.parse(server.models) as NodeModels;
      const role = COMPARED_ROLES.find((r) => (theirs[r] ?? null) !== mine[r]);
      if (!role) continue;
      why =
        `this worker's ${role} model (${mine[role] ?? "none"}) differs from the cluster's (${theirs[role] ?? "none"}, ` +
        `on ${server.role} node ${server.id} at ${server.host}): it would write what no server queries; ` +
        `install and activate the same model here (vsearch models …), then restart the worker`;
      break;
    }
    if (why !== this.refusal) {
      if (why) this.opts.logger.error("refusing jobs", { reason: why });
      else if (this.refusal) this.opts.logger.info("models agree with the cluster again; claiming");
    }
    this.refusal = why;
  }

  /**
   * A serving node of this version must not start beside a running serving node of another: one
   * of them would read or write rows the other's schema or code does not expect. Stopped and lost
   * rows are history (an upgrade stops the old nodes first) and never block.
   */
  private async refuseMixedVersions(): Promise<void> {
    const { now, nodes } = await this.store.list();
    const others = nodes.filter(
      (n) =>
        n.role !== "worker" && n.id !== this.info.id && n.version !== VERSION && this.statusOf(n, now) === "running",
    );
    const [first] = others;
    if (!first) return;
    const more = others.length > 1 ? ` (and ${others.length - 1} more)` : "";
    throw new MixedVersionsError(
      `${first.role} node ${first.id} on ${first.host} (pid ${first.pid}) runs vsearch ${first.version}${more} on this database, this is ${VERSION}: ` +
        `mixed versions are refused. Stop the nodes of the old version first (every server and worker), then start this version everywhere (docs/SCALE-OUT.md, "Upgrade")`,
    );
  }

  private ownModels(): NodeModels {
    const out = {} as NodeModels;
    for (const role of COMPARED_ROLES) out[role] = this.models.active(role)?.modelId ?? null;
    return out;
  }

  private statusOf(n: NodeRow, now: number): NodeView["status"] {
    if (n.stopped_at !== null) return "stopped";
    return now - n.heartbeat_at > 3 * this.heartbeatMs ? "lost" : "running";
  }

  /** Every registered node, newest start last. */
  async list(): Promise<NodeView[]> {
    const { now, nodes } = await this.store.list();
    return nodes.map((n) => ({
      id: n.id,
      role: n.role,
      status: this.statusOf(n, now),
      kinds: JSON.parse(n.kinds) as string[],
      concurrency: n.concurrency,
      device: n.device,
      models: JSON.parse(n.models) as NodeModels,
      version: n.version,
      host: n.host,
      pid: n.pid,
      started_at: new Date(n.started_at).toISOString(),
      last_heartbeat: new Date(n.heartbeat_at).toISOString(),
      heartbeat_age_secs: Math.max(0, Math.round((now - n.heartbeat_at) / 1000)),
      refused: n.refused,
    }));
  }

  /** Stops the heartbeat and marks the row stopped (a crashed node's row is listed `lost` instead). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.running = false;
    await this.beating; // a beat in flight would clear stopped_at after it
    if (!this.registered) return;
    this.registered = false;
    try {
      await this.store.stopped(this.info.id);
    } catch (e) {
      this.opts.logger.warn("could not mark this node stopped", { err: (e as Error)?.message });
    }
  }
}
