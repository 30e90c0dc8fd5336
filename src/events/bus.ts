/**
 * In-process domain events (issue 10): what happened, published by the domain that did it once
 * its transaction has committed, and the reactions to it (search cache invalidation, waking the
 * job runner, the webhook dispatcher or the rendition worker) subscribed in one place, app.ts.
 * Not the webhook outbox: those are rows (events/store.ts) written inside the transaction; these
 * are the in-memory nudges that follow it. A publisher never learns who listens.
 */
export type DomainEvent =
  /** Videos and their rows are gone (deleted, or with their collection or account). */
  | { type: "videos.deleted"; videoIds: string[] }
  /** A video's searchable content changed (its first stages, or an enrichment stage, wrote rows). */
  | { type: "video.content_changed"; videoId: string }
  /** An upload (or a forced re-import) was accepted: its video and job are queued, video.created recorded. */
  | { type: "video.accepted"; accountId: string }
  /** A failed job was queued again. */
  | { type: "job.retried"; jobId: string }
  /** A job finished and its video is searchable; its web rendition was queued. */
  | { type: "job.completed"; jobId: string; videoId: string; accountId: string }
  /** Webhook outbox rows were written (credits.low/exhausted, webhook tests): deliverable now. */
  | { type: "outbox.written"; accountId: string };

export type DomainEventType = DomainEvent["type"];
export type EventOf<T extends DomainEventType> = Extract<DomainEvent, { type: T }>;

/** What a domain needs to announce; it never sees the subscribers. */
export interface EventPublisher {
  /** Call only after the transaction that made the change has committed. */
  publish(event: DomainEvent): void;
  /** Runs a synchronous transaction; what it publishes is delivered only if it returns. */
  afterCommit<T>(fn: () => T): T;
}

export class EventBus implements EventPublisher {
  private readonly handlers = new Map<DomainEventType, ((e: DomainEvent) => void)[]>();
  /** One list per open `afterCommit` (innermost last). */
  private readonly held: DomainEvent[][] = [];

  constructor(private readonly onError: (type: DomainEventType, err: unknown) => void = () => {}) {}

  subscribe<T extends DomainEventType>(type: T, handler: (e: EventOf<T>) => void): void {
    const list = this.handlers.get(type) ?? [];
    list.push(handler as (e: DomainEvent) => void);
    this.handlers.set(type, list);
  }

  /**
   * Synchronous, in subscription order. The change is already committed, so a subscriber that
   * throws is logged and the others still run: a reaction failing never undoes what happened
   * nor reaches the publisher's caller.
   */
  publish(event: DomainEvent): void {
    const open = this.held[this.held.length - 1];
    if (open) open.push(event);
    else this.deliver(event);
  }

  /**
   * Runs `fn`, which runs a transaction (bun:sqlite transactions are synchronous), holding back
   * what is published meanwhile: delivered when `fn` returns (committed), dropped when it throws
   * (rolled back). Nested: the inner one's events join the outer one's, so a savepoint that
   * succeeds inside a transaction that fails announces nothing.
   */
  afterCommit<T>(fn: () => T): T {
    const mine: DomainEvent[] = [];
    this.held.push(mine);
    let result: T;
    try {
      result = fn();
    } finally {
      this.held.pop();
    }
    const outer = this.held[this.held.length - 1];
    if (outer) outer.push(...mine);
    else for (const e of mine) this.deliver(e);
    return result;
  }

  private deliver(event: DomainEvent): void {
    for (const h of this.handlers.get(event.type) ?? []) {
      try {
        h(event);
      } catch (err) {
        this.onError(event.type, err);
      }
    }
  }
}
