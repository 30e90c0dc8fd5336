/**
 * LISTEN / NOTIFY for issue 26 (several `serve` processes: caches and the in-memory index learn of
 * other nodes' commits). postgres.js keeps every LISTEN on one dedicated connection, reconnects
 * it with backoff and calls `onListen` after every (re)connect. Notifications sent while that
 * connection was down are lost, so `onListen` is where a subscriber re-reads what it follows (a
 * content version) instead of trusting that it saw every notification.
 *
 * Publishing goes through the executor (`SELECT pg_notify(?, ?)`): inside a unit of work the
 * notification is delivered when the transaction commits, and never when it rolls back.
 */
import type postgres from "postgres";
import { StoreError, toStoreError } from "../errors.ts";
import type { Executor } from "../executor.ts";

/** PostgreSQL refuses payloads of 8000 bytes or more: send ids in chunks, or a version to re-read. */
export const MAX_NOTIFY_PAYLOAD_BYTES = 7999;

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel))
    throw new StoreError("misuse", `notification channel ${JSON.stringify(channel)}: use [a-z_][a-z0-9_]*, at most 63`);
}

export interface Subscription {
  /** The server process of the listening connection (changes after a reconnect). */
  readonly pid: () => number | undefined;
  unlisten(): Promise<void>;
}

/**
 * Subscribes to `channel`. `onListen` runs once the LISTEN is in place and again after every
 * reconnect; an error it throws (or rejects with) goes to `onError`, as does one from `onNotify`.
 */
export async function listen(
  pool: postgres.Sql,
  channel: string,
  handlers: {
    onNotify: (payload: string) => void | Promise<void>;
    onListen?: () => void | Promise<void>;
    onError?: (err: unknown) => void;
  },
): Promise<Subscription> {
  checkChannel(channel);
  const report = handlers.onError ?? (() => {});
  const guard = (fn: () => void | Promise<void>) => {
    try {
      Promise.resolve(fn()).catch(report);
    } catch (err) {
      report(err);
    }
  };
  try {
    const meta = await pool.listen(
      channel,
      (payload) => guard(() => handlers.onNotify(payload)),
      () => {
        if (handlers.onListen) guard(handlers.onListen);
      },
    );
    return {
      pid: () => (meta.state as { pid?: number } | undefined)?.pid,
      unlisten: () => meta.unlisten(),
    };
  } catch (err) {
    throw toStoreError(err) ?? err;
  }
}

/** Sends `payload` on `channel` through `exec`: with the unit of work's commit when inside one. */
export async function publish(exec: Executor, channel: string, payload: string): Promise<void> {
  if (exec.backend !== "postgres") throw new StoreError("misuse", "notifications are a PostgreSQL feature");
  checkChannel(channel);
  if (Buffer.byteLength(payload) > MAX_NOTIFY_PAYLOAD_BYTES) {
    throw new StoreError(
      "misuse",
      `notification on ${channel} is ${Buffer.byteLength(payload)} bytes; PostgreSQL takes at most ${MAX_NOTIFY_PAYLOAD_BYTES}`,
    );
  }
  await exec.get("SELECT pg_notify(?, ?)", channel, payload);
}
