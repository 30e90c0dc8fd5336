import { AppError, notFound } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { Page } from "../core/paging.ts";
import { offsetOf } from "../core/paging.ts";
import { parseInput } from "../core/validate.ts";
import type { CollectionRow, CollectionStats, CollectionStore } from "./store.ts";
import { type Collection, type CollectionDetail, collectionInputSchema } from "./schema.ts";

/** Removes videos' files and index rows; implemented by the videos domain, wired in app.ts. */
export interface VideoPurger {
  purgeVideos(accountId: string, videoIds: string[], reason: "collection_deleted"): Promise<void>;
}

export interface PosterUrls {
  posterUrl(videoId: string): string;
}

const THUMBNAILS_PER_COLLECTION = 4;

export class CollectionService {
  constructor(
    private readonly store: CollectionStore,
    private readonly purger: VideoPurger,
    private readonly urls: PosterUrls,
  ) {}

  async create(accountId: string, input: unknown): Promise<Collection> {
    const { name } = parseInput(collectionInputSchema, input);
    const row: CollectionRow = { id: newId("col"), user_id: accountId, name, created_at: nowIso() };
    if (!(await this.store.insert(row))) throw taken(name);
    return { ...row, video_count: 0, thumbnail_urls: [] };
  }

  async list(accountId: string, page: Page): Promise<{ items: Collection[]; total: number }> {
    const rows = await this.store.list(accountId, page.perPage, offsetOf(page));
    return { items: await this.decorate(rows), total: await this.store.count(accountId) };
  }

  /** Another account's collection is indistinguishable from a missing one (404, never 403). */
  async require(accountId: string, id: string): Promise<CollectionRow> {
    const row = await this.store.get(accountId, id);
    if (!row) throw notFound("COLLECTION_NOT_FOUND", `Collection ${id}`);
    return row;
  }

  async findByName(accountId: string, name: string): Promise<CollectionRow | null> {
    return await this.store.findByName(accountId, name.trim());
  }

  async get(accountId: string, id: string): Promise<CollectionDetail> {
    const row = await this.require(accountId, id);
    const all = await this.store.stats([id]);
    const stats = all.get(id);
    return {
      ...(await this.decorate([row], all))[0],
      total_duration_secs: stats?.total_duration_secs ?? 0,
      storage_bytes: stats?.storage_bytes ?? 0,
    };
  }

  async rename(accountId: string, id: string, input: unknown): Promise<Collection> {
    const { name } = parseInput(collectionInputSchema, input);
    await this.require(accountId, id);
    if (!(await this.store.rename(accountId, id, name))) throw taken(name);
    return (await this.decorate([await this.require(accountId, id)]))[0];
  }

  async delete(accountId: string, id: string): Promise<void> {
    await this.require(accountId, id);
    const videoIds = await this.store.videoIds(accountId, id);
    await this.purger.purgeVideos(accountId, videoIds, "collection_deleted");
    await this.store.delete(accountId, id);
  }

  private async decorate(rows: CollectionRow[], known?: Map<string, CollectionStats>): Promise<Collection[]> {
    const ids = rows.map((r) => r.id);
    const stats = known ?? (await this.store.stats(ids));
    const posters = await this.store.posters(ids, THUMBNAILS_PER_COLLECTION);
    return rows.map((r) => ({
      ...r,
      video_count: stats.get(r.id)?.video_count ?? 0,
      thumbnail_urls: (posters.get(r.id) ?? []).map((p) => this.urls.posterUrl(p.video_id)),
    }));
  }
}

const taken = (name: string) => new AppError("COLLECTION_NAME_TAKEN", `A collection named "${name}" already exists`);
