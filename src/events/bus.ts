/**
 * In-process domain events (issue 10): what happened, published by the domain that did it once
 * its transaction has committed, and the reactions to it (search cache invalidation, waking the
 * task queue, the webhook dispatcher) subscribed in one place, app.ts.
 * Delivery after commit rides on the store seam (store/unit-of-work.ts `afterCommit`): events/
 * sits above store/, so the bus uses the seam and the seam knows nothing of events.
 * Not the webhook outbox: those are rows (events/store.ts) written inside the transaction; these
 * are the in-memory nudges that follow it. A publisher never learns who listens.
 */
import type { UnitOfWork } from "../store/unit-of-work.ts";

export type DomainEvent =
  /** Videos and their rows are gone (deleted, or with their collection or account). */
  | { type: "videos.deleted"; videoIds: string[] }
  /** A video's searchable content changed (its first stages, or an enrichment stage, wrote rows). */
  | { type: "video.content_changed"; videoId: string }
  /** An upload (or a forced re-import) was accepted: its video and job are queued, video.created recorded. */
  | { type: "video.accepted"; accountId: string }
  /** A failed job was queued again. */
  | { type: "job.retried"; jobId: string }
  /** A job finished: its video is fully indexed (its OCR task ended too). */
  | { type: "job.completed"; jobId: string; videoId: string; accountId: string }
  /** Webhook outbox rows were written (credits.low/exhausted, webhook tests): deliverable now. */
  | { type: "outbox.written"; accountId: string };

export type DomainEventType = DomainEvent["type"];
export type EventOf<T extends DomainEventType> = Extract<DomainEvent, { type: T }>;

/** What a domain needs to announce; it never sees the subscribers. */
export interface EventPublisher {
  /**
   * Announces a committed change. Inside a transaction of the unit of work (`uow.run`) the event
   * is held and delivered once the outermost transaction commits, dropped if it rolls back;
   * outside one it is delivered at once.
   */
  publish(event: DomainEvent): void;
}

type Handler = (e: DomainEvent) => void | Promise<void>;

/**
 * Where events go to other processes (events/cluster.ts on PostgreSQL): `send` runs inside the
 * publishing transaction, before its commit, so the other processes hear of a change exactly when
 * it commits (LISTEN/NOTIFY delivers at commit, and nothing on rollback).
 */
export interface EventRelay {
  forwards(type: DomainEventType): boolean;
  send(event: DomainEvent): Promise<void>;
}

export class EventBus implements EventPublisher {
  private readonly handlers = new Map<DomainEventType, Handler[]>();
  /** Deliveries under way (a publish outside a unit of work starts one and returns at once). */
  private readonly delivering = new Set<Promise<void>>();
  private relay: EventRelay | null = null;

  constructor(
    /** Delivery waits for the commit of the transaction a publish happens in. */
    private readonly commits: Pick<UnitOfWork, "afterCommit" | "beforeCommit">,
    private readonly onError: (type: DomainEventType, err: unknown) => void = () => {},
  ) {}

  subscribe<T extends DomainEventType>(type: T, handler: (e: EventOf<T>) => void | Promise<void>): void {
    const list = this.handlers.get(type) ?? [];
    list.push(handler as Handler);
    this.handlers.set(type, list);
  }

  /**
   * Delivery is in subscription order, after the commit (see EventPublisher), each subscriber
   * awaited before the next: a reaction that reads the store (the search index's) finishes before
   * the next one starts, so two reactions never interleave their reads and writes. Inside a unit
   * of work the publisher's `run` resolves once every subscriber has. The
   * change is already committed, so a subscriber that throws is logged and the others still run:
   * a reaction failing never undoes what happened nor reaches the publisher's caller. A savepoint
   * that succeeds inside a transaction that fails announces nothing.
   */
  publish(event: DomainEvent): void {
    const relay = this.relay;
    if (relay?.forwards(event.type)) this.commits.beforeCommit(() => relay.send(event));
    this.commits.afterCommit(() => this.track(this.deliver(event)));
  }

  /** Events of the relayed types also go to the other processes (the app wires it on PostgreSQL). */
  relayTo(relay: EventRelay): void {
    this.relay = relay;
  }

  /**
   * Delivers an event another process published (it has committed there) to this process's
   * subscribers, as `publish` does after a local commit; `idle()` waits for it too.
   */
  deliverRemote(event: DomainEvent): Promise<void> {
    return this.track(this.deliver(event));
  }

  /**
   * Resolves once every delivery under way has finished (and those they published in turn): for
   * the app's close, and for a caller that published outside a unit of work and must see every
   * reaction done. Bounded: each pass waits for what is in flight; reactions publish finitely.
   */
  async idle(): Promise<void> {
    while (this.delivering.size) await Promise.all(this.delivering);
  }

  private track(delivery: Promise<void>): Promise<void> {
    this.delivering.add(delivery);
    // deliver() catches every subscriber's failure, so this never rejects.
    void delivery.finally(() => this.delivering.delete(delivery));
    return delivery;
  }

  private async deliver(event: DomainEvent): Promise<void> {
    // Awaited one by one on purpose: subscription order is the contract (see above).
    for (const h of this.handlers.get(event.type) ?? []) {
      try {
        await h(event);
      } catch (err) {
        this.onError(event.type, err);
      }
    }
  }
}
