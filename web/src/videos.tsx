/**
 * A collection's videos, page by page ("Load more"), with their live indexing status (from the
 * server, so it survives a reload: live.ts), and per video: open, retry a failed one, delete
 * (after confirmation). A failed video says what went wrong, what it means and what to do.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { call, client, fmtBytes, fmtTime, local, type Schemas } from "./api.ts";
import { stageWords, statusWords } from "./explain.ts";
import { isFinal, type Job, latestJob, retryVideo } from "./live.ts";
import { JobError, LoadMore, useErrors, ErrorLine } from "./ui.tsx";

type Video = Schemas["Video"];
const PER_PAGE = 24;

export function VideoList({
  collectionId,
  collectionName,
  refresh,
  jobs,
  finished,
  onRunning,
}: {
  collectionId: string;
  collectionName: string;
  /** Bumped by the page after an upload: the first page is read again. */
  refresh: number;
  /** The page's live jobs feed (live.ts), newest job per video. */
  jobs: Map<string, Job>;
  /** The last job the feed saw end: its video's card is read again. */
  finished: Job | null;
  /** Whether a listed video is still indexing (the page keeps the feed running while so). */
  onRunning: (running: boolean) => void;
}) {
  const [videos, setVideos] = useState<Video[]>([]);
  const [total, setTotal] = useState<number | null>(null);
  const [page, setPage] = useState(1);
  const [busy, setBusy] = useState(false);
  const { error, act } = useErrors();

  const load = (p: number, replace: boolean) =>
    act(async () => {
      setBusy(true);
      try {
        const { data, meta } = await call(
          client.GET("/v1/videos", { params: { query: { collection_id: collectionId, page: p, per_page: PER_PAGE } } }),
        );
        setVideos((cur) => (replace ? data : [...cur, ...data.filter((v) => !cur.some((c) => c.id === v.id))]));
        setTotal(meta.total ?? null);
        setPage(p);
      } finally {
        setBusy(false);
      }
    });
  useEffect(() => void load(1, true), [collectionId, refresh]);

  const reloadOne = (id: string) =>
    act(async () => {
      const { data } = await call(client.GET("/v1/videos/{video_id}", { params: { path: { video_id: id } } }));
      setVideos((list) => list.map((v) => (v.id === id ? data : v)));
    });
  // A failed video's reason is on its job: read once for each failed card (the feed runs only
  // while something indexes).
  const [failedJobs, setFailedJobs] = useState<Map<string, Job>>(new Map());
  useEffect(() => {
    for (const v of videos)
      if (v.status === "failed" && !failedJobs.has(v.id))
        void latestJob(v.id)
          .then((j) => j && setFailedJobs((m) => new Map(m).set(v.id, j)))
          .catch(() => {});
  }, [videos]);
  const running = videos.some((v) => !isFinal(v.status));
  useEffect(() => onRunning(running), [running]);
  useEffect(() => {
    if (finished && videos.some((v) => v.id === finished.video_id)) void reloadOne(finished.video_id);
  }, [finished]);
  // A card still indexing is read again when its video has become searchable — its job is in a
  // stage that runs after that (on-screen text waits its turn in the queue: progressive indexing)
  // — or has ended, even one the feed first saw already ended (a short video indexed between two
  // polls is never "seen to end"). Once each.
  const reloaded = useRef(new Set<string>());
  useEffect(() => {
    for (const v of videos) {
      const j = jobs.get(v.id);
      if (!j || isFinal(v.status) || reloaded.current.has(j.id)) continue;
      const ended = j.status === "done" || j.status === "failed";
      const searchable = j.status === "processing" && !!j.stage && (j.stages_pending ?? []).includes(j.stage);
      if (!ended && !searchable) continue;
      reloaded.current.add(j.id);
      void reloadOne(v.id);
    }
  }, [jobs, videos]);

  const remove = (v: Video) => {
    if (!confirm(`Delete the video "${v.filename}"? Its file and everything found in it are removed.`)) return;
    void act(async () => {
      await call(client.DELETE("/v1/videos/{video_id}", { params: { path: { video_id: v.id } } }));
      setVideos((list) => list.filter((x) => x.id !== v.id));
      setTotal((n) => (n == null ? n : n - 1));
    });
  };
  const retry = (v: Video) =>
    act(async () => {
      await retryVideo(v.id, jobs.get(v.id) ?? failedJobs.get(v.id));
      setFailedJobs((m) => {
        const n = new Map(m);
        n.delete(v.id);
        return n;
      });
      setVideos((list) => list.map((x) => (x.id === v.id ? { ...x, status: "queued", progress_pct: 0 } : x)));
    });

  return (
    <section class="stack" aria-labelledby="videos-h">
      <h2 id="videos-h">Videos</h2>
      <ErrorLine error={error} />
      {total === 0 ? <p class="muted">No videos in this collection yet: drop some above.</p> : null}
      <ul class="cards" aria-label={`Videos in ${collectionName}`}>
        {videos.map((v) => (
          <VideoCard
            key={v.id}
            video={v}
            job={jobs.get(v.id) ?? failedJobs.get(v.id)}
            onRetry={() => retry(v)}
            onDelete={() => remove(v)}
          />
        ))}
      </ul>
      <LoadMore shown={videos.length} total={total} busy={busy} what="videos" onMore={() => load(page + 1, false)} />
    </section>
  );
}

function VideoCard({
  video: v,
  job,
  onRetry,
  onDelete,
}: {
  video: Video;
  job: Job | undefined;
  onRetry: () => void;
  onDelete: () => void;
}) {
  // The feed's job is newer than the card while the video indexes.
  const live = job && !isFinal(v.status) ? job : null;
  const status = live?.status ?? v.status;
  const failed = status === "failed";
  return (
    <li class={`card video-card st-${status}`} data-video-id={v.id}>
      <a href={`#/videos/${v.id}`} class="video-link">
        {v.thumbnail_url ? (
          <img src={local(v.thumbnail_url)} alt="" loading="lazy" class="poster" />
        ) : (
          <div class="poster" />
        )}
        <span class="title">{v.filename}</span>
      </a>
      <p class="muted">
        <span class="status">{statusWords(status)}</span> · {fmtTime(v.duration_secs)} · {fmtBytes(v.file_size_bytes)}
      </p>
      {live && !failed ? (
        <p class="progress-line" aria-live="polite">
          <progress max={100} value={live.progress_pct} aria-label={`Indexing ${v.filename}`} />{" "}
          <span>
            {stageWords(live.stage)} {Math.round(live.progress_pct)}%
          </span>
        </p>
      ) : null}
      {v.warning ? <p class="warning">⚠ {v.warning}</p> : null}
      {failed ? <JobError error={job?.error ?? { code: "FAILED", message: "Indexing failed (see Jobs)" }} /> : null}
      <div class="row">
        {failed ? (
          <button type="button" class="small" onClick={onRetry} aria-label={`Retry ${v.filename}`}>
            Retry
          </button>
        ) : null}
        <button type="button" class="danger small" onClick={onDelete} aria-label={`Delete ${v.filename}`}>
          Delete
        </button>
      </div>
    </li>
  );
}
