/**
 * Domain events across processes (issue 26: several `serve` processes and workers on one
 * PostgreSQL database). The bus (events/bus.ts) delivers a committed change to this process's
 * subscribers; this relay also sends the events other processes react to as a NOTIFY inside the
 * publishing transaction, and delivers the ones other processes sent to this process's
 * subscribers, in commit order. So a video deleted through server A leaves server B's search
 * caches and in-memory index as soon as A commits, and a video a worker indexed is searchable on
 * every server.
 *
 * Notifications are lost while a process's listening connection is down (PostgreSQL queues them
 * only for sessions listening at the commit). Each one carries the content version: the vector
 * change log's counter (`vector_change_seq`, bumped by every write of frames, shots or their
 * vectors, row-locked by the writing transaction, so versions follow commit order). After a
 * reconnect the relay catches up from the last version it saw: the videos changed since are
 * re-read, the videos this process holds that are gone are dropped, every search cache is
 * dropped (text-only changes have no version), and the queue and the dispatcher are woken.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "../core/logger.ts";
import type { Executor } from "../store/executor.ts";
import type { DomainEvent, DomainEventType, EventBus, EventRelay } from "./bus.ts";

export const EVENTS_CHANNEL = "vsearch_events";

/** The events another process reacts to (job.completed has no subscriber; it goes out as a webhook). */
const FORWARDED = new Set<DomainEventType>([
  "videos.deleted",
  "video.content_changed",
  "video.accepted",
  "job.retried",
  "outbox.written",
]);

/** Video ids per notification: PostgreSQL takes payloads under 8000 bytes (ids are ~30 characters). */
const IDS_PER_NOTIFICATION = 150;

/** The version is read inside the publishing transaction: its own change's number when it wrote vectors. */
const NOTIFY = "SELECT pg_notify(?, (SELECT seq FROM vector_change_seq WHERE id = 1)::text || ' ' || ?)";
const VERSION = "SELECT seq FROM vector_change_seq WHERE id = 1";

export interface ListenHandlers {
  onNotify: (payload: string) => void;
  /** After the LISTEN is in place, and again after every reconnect. */
  onListen: () => void | Promise<void>;
  onError: (err: unknown) => void;
}

/** What the relay needs to catch up after a reconnect (wired by app.ts). */
export interface CatchUp {
  /** Videos whose vector rows changed after `version` (the change log). */
  changedAfter(version: number): Promise<string[]>;
  /** Videos this process holds in memory (its vector index) that the store no longer has. */
  gone(): Promise<string[]>;
  /** Wakes what polls anyway (the task queue, the webhook dispatcher): work may have been queued meanwhile. */
  wake(): void;
}

export class ClusterEvents implements EventRelay {
  /** This process, for skipping its own notifications (they were delivered here at commit). */
  readonly origin = randomUUID();
  private seen = 0;
  private listens = 0;
  private unlisten: (() => Promise<void>) | null = null;
  /** Remote events and catch-ups, one after another: subscribers see other processes' commits in order. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Executor,
    private readonly bus: EventBus,
    private readonly catchUp: CatchUp,
    private readonly logger: Logger,
  ) {}

  forwards(type: DomainEventType): boolean {
    return FORWARDED.has(type);
  }

  async send(event: DomainEvent): Promise<void> {
    const parts: DomainEvent[] =
      event.type === "videos.deleted"
        ? chunks(event.videoIds, IDS_PER_NOTIFICATION).map((videoIds) => ({ ...event, videoIds }))
        : [event];
    for (const e of parts) await this.db.get(NOTIFY, EVENTS_CHANNEL, `${this.origin} ${JSON.stringify(e)}`);
  }

  /** Starts listening (the app's start): `listen` is store/pg/notify.ts's, on the app's pool. */
  async start(listen: (channel: string, h: ListenHandlers) => Promise<{ unlisten(): Promise<void> }>): Promise<void> {
    const sub = await listen(EVENTS_CHANNEL, {
      onNotify: (payload) => this.enqueue(() => this.receive(payload)),
      onListen: () => this.enqueue(() => this.listening()),
      onError: (err) => this.logger.error("cluster event failed", { err: errText(err) }),
    });
    this.unlisten = () => sub.unlisten();
  }

  async stop(): Promise<void> {
    const un = this.unlisten;
    this.unlisten = null;
    await un?.().catch(() => {});
    await this.chain;
  }

  /** The content version this process has seen (the last notification's, or the one read at a (re)connect). */
  get version(): number {
    return this.seen;
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(step).catch((err) => this.logger.error("cluster event failed", { err: errText(err) }));
    return this.chain;
  }

  private async receive(payload: string): Promise<void> {
    const a = payload.indexOf(" ");
    const b = payload.indexOf(" ", a + 1);
    const version = Number(payload.slice(0, a));
    if (Number.isFinite(version)) this.seen = Math.max(this.seen, version);
    if (payload.slice(a + 1, b) === this.origin) return;
    await this.bus.deliverRemote(JSON.parse(payload.slice(b + 1)) as DomainEvent);
  }

  private async listening(): Promise<void> {
    const first = this.listens++ === 0;
    const now = (await this.db.get<{ seq: number }>(VERSION))?.seq ?? 0;
    if (first) {
      // Everything before this LISTEN is in the store the warm-up reads; later commits are notified.
      this.seen = Math.max(this.seen, now);
      return;
    }
    const since = this.seen;
    const changed = await this.catchUp.changedAfter(since);
    const gone = await this.catchUp.gone();
    this.logger.info("cluster events reconnected: caught up", {
      since,
      version: now,
      changed: changed.length,
      gone: gone.length,
    });
    for (const videoId of changed) await this.bus.deliverRemote({ type: "video.content_changed", videoId });
    // Always, even with no id: it drops every search cache (text-only changes carry no version).
    await this.bus.deliverRemote({ type: "videos.deleted", videoIds: gone });
    this.catchUp.wake();
    this.seen = Math.max(this.seen, now);
  }
}

function chunks<T>(xs: T[], n: number): T[][] {
  if (xs.length <= n) return [xs];
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

const errText = (err: unknown) => (err instanceof Error ? (err.stack ?? err.message) : String(err));
