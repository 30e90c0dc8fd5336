/**
 * Fixtures of the store conformance tests (stores.test.ts, content-stores.test.ts), built through
 * the stores' own methods on one backend: an account with a collection, and videos in it.
 */
import { AccountStore } from "../../../src/accounts/store.ts";
import { CollectionStore } from "../../../src/collections/store.ts";
import type { VideoRow } from "../../../src/videos/schema.ts";
import { VideoStore } from "../../../src/videos/store.ts";
import type { OpenedBackend } from "./backends.ts";

let seq = 0;
/** An id no other test of the file's database has used. */
export const uniqueId = (prefix: string) => `${prefix}_${++seq}_${Math.random().toString(36).slice(2, 8)}`;

export interface Tenant {
  account: string;
  collection: string;
}

/** An account (metered when `credits` is a number) with one collection. */
export async function newTenant(b: OpenedBackend, credits: number | null = null): Promise<Tenant> {
  const account = uniqueId("usr");
  await new AccountStore(b.exec).insertAccount({
    id: account,
    name: `tenant ${account}`,
    plan: credits === null ? "free" : "payg",
    credits_balance: credits,
    created_at: new Date().toISOString(),
  });
  const collection = uniqueId("col");
  await new CollectionStore(b.exec).insert({
    id: collection,
    user_id: account,
    name: `collection ${collection}`,
    created_at: new Date().toISOString(),
  });
  return { account, collection };
}

/** A video row of the tenant's collection; `over` replaces any field. */
export function videoRow(t: Tenant, over: Partial<VideoRow> = {}): VideoRow {
  const id = over.id ?? uniqueId("vid");
  const at = over.created_at ?? new Date().toISOString();
  return {
    id,
    account_id: t.account,
    collection_id: t.collection,
    filename: `${id}.mp4`,
    status: "ready",
    progress_pct: 100,
    container: "mp4",
    mime_type: "video/mp4",
    duration_secs: 10,
    width: 64,
    height: 48,
    fps: 25,
    codec: "h264",
    audio_codec: null,
    has_audio: 0,
    file_size_bytes: 1000,
    storage_bytes: 1000,
    source_path: `/data/${id}.mp4`,
    poster_path: null,
    stages: "{}",
    error_code: null,
    error_message: null,
    content_hash: null,
    warning: null,
    created_at: at,
    updated_at: at,
    ...over,
  };
}

/** Inserts a video (through VideoStore) and returns its id. */
export async function newVideo(b: OpenedBackend, t: Tenant, over: Partial<VideoRow> = {}): Promise<string> {
  const row = videoRow(t, over);
  await new VideoStore(b.exec).insert(row);
  return row.id;
}
