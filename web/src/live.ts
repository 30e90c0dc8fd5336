/**
 * Live indexing status that survives a reload: the page asks the server, not its own memory.
 * One poll of GET /v1/jobs (newest first) every few seconds serves every video card and upload
 * row on the page, and only while something is still running — one request for any number of
 * videos, well inside the jobs rate limit.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, call, client, type Schemas } from "./api.ts";

export type Job = Schemas["Job"];
const POLL_MS = 2500;
const FINAL = new Set(["done", "failed"]);
export const isFinal = (status: string) => FINAL.has(status) || status === "ready";

/**
 * The newest job of each video, refreshed while `active`; `onFinished(job)` is told once per job
 * that ends while watched (the page then reloads that video's card).
 */
export function useJobsFeed(active: boolean, onFinished: (job: Job) => void): Map<string, Job> {
  const [jobs, setJobs] = useState<Map<string, Job>>(new Map());
  const seen = useRef(new Map<string, string>());
  const finished = useRef(onFinished);
  finished.current = onFinished;
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const { data } = await call(client.GET("/v1/jobs", { params: { query: { per_page: 50 } } }));
        if (stopped) return;
        const byVideo = new Map<string, Job>();
        for (const j of data) if (!byVideo.has(j.video_id)) byVideo.set(j.video_id, j);
        for (const j of byVideo.values()) {
          const before = seen.current.get(j.id);
          if (before && !FINAL.has(before) && FINAL.has(j.status)) finished.current(j);
          seen.current.set(j.id, j.status);
        }
        setJobs(byVideo);
      } catch (e) {
        // A 429 or a network blip: the next tick tries again; anything else stops the feed.
        if (!(e instanceof ApiError) || (e.status !== 429 && e.status !== 0)) return;
      }
      if (!stopped) timer = setTimeout(tick, POLL_MS);
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [active]);
  return jobs;
}

/** The newest job of one video (to retry it), fetched when the feed does not have it. */
export async function latestJob(videoId: string): Promise<Job | null> {
  const { data } = await call(client.GET("/v1/jobs", { params: { query: { video_id: videoId, per_page: 1 } } }));
  return data[0] ?? null;
}

/** Runs a failed video's newest job again (POST /v1/jobs/{id}/retry). */
export async function retryVideo(videoId: string, known?: Job | null): Promise<Job> {
  const job = known ?? (await latestJob(videoId));
  if (!job) throw new ApiError(404, "JOB_NOT_FOUND", "This video has no job to retry");
  return (await call(client.POST("/v1/jobs/{job_id}/retry", { params: { path: { job_id: job.id } } }))).data;
}
