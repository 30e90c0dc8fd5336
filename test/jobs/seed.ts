/**
 * Queue fixtures made through the stores (no SQL): accounts with videos, each video with a job
 * and its ingest task queued, as an upload leaves them. For the tests that play workers over one
 * database (queue.test.ts, claimers.test.ts and its worker processes).
 */
import type { Stores } from "../helpers/stores.ts";

const at = new Date(0).toISOString();

/** `n` videos of `accountId` (made with its collection if new), each with a queued job and ingest task. */
export async function seedIngest(s: Stores, accountId: string, n: number, prefix = accountId): Promise<string[]> {
  const ids: string[] = [];
  await s.transaction(async () => {
    if (!(await s.accounts.getAccount(accountId))) {
      await s.accounts.insertAccount({
        id: accountId,
        name: accountId,
        plan: "enterprise",
        credits_balance: null,
        created_at: at,
      });
      await s.collections.insert({ id: `col_${accountId}`, user_id: accountId, name: "c", created_at: at });
    }
    for (let i = 0; i < n; i++) {
      const id = `vid_${prefix}_${i}`;
      await s.videos.insert({
        id,
        account_id: accountId,
        collection_id: `col_${accountId}`,
        filename: `${id}.mp4`,
        status: "queued",
        progress_pct: 0,
        container: "mp4",
        mime_type: "video/mp4",
        duration_secs: null,
        width: null,
        height: null,
        fps: null,
        codec: null,
        audio_codec: null,
        has_audio: 0,
        file_size_bytes: 1,
        storage_bytes: 1,
        source_path: `videos/${id}/source.mp4`,
        poster_path: null,
        stages: "{}",
        error_code: null,
        error_message: null,
        created_at: at,
        updated_at: at,
      });
      await s.jobs.insert({ id: `job_${prefix}_${i}`, account_id: accountId, video_id: id, created_at: at });
      await s.tasks.enqueue({ kind: "ingest", accountId, videoId: id, jobId: `job_${prefix}_${i}` });
      ids.push(id);
    }
  });
  return ids;
}
