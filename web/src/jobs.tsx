/**
 * Jobs: every indexing run of the account, newest first, page by page — status, the stage in
 * words, progress, and a failure's code with what it means and what to do (explain.ts), with
 * Retry. Refreshes itself while a job on the page is still running.
 */
import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import { call, client, fmtDate, type Schemas } from "./api.ts";
import { stageWords, statusWords } from "./explain.ts";
import { isFinal, type Job } from "./live.ts";
import { ColumnHeads, ErrorLine, JobError, LoadMore, useErrors } from "./ui.tsx";

const PER_PAGE = 25;
const REFRESH_MS = 3000;
type Status = NonNullable<Schemas["Job"]["status"]>;
const FILTERS: { value: "" | Status; label: string }[] = [
  { value: "", label: "All" },
  { value: "failed", label: "Failed" },
  { value: "processing", label: "Indexing" },
  { value: "queued", label: "Waiting" },
  { value: "done", label: "Done" },
];

export function JobsPage() {
  const [status, setStatus] = useState<"" | Status>("");
  const [jobs, setJobs] = useState<Job[]>([]);
  const [total, setTotal] = useState<number | null>(null);
  const [pages, setPages] = useState(1);
  const [busy, setBusy] = useState(false);
  const [names, setNames] = useState<Map<string, string>>(new Map());
  const { error, act } = useErrors();

  /** Pages 1..n again (a refresh keeps what "Load more" showed). */
  const load = (n: number) =>
    act(async () => {
      setBusy(true);
      try {
        const all: Job[] = [];
        let count: number | null = null;
        for (let p = 1; p <= n; p++) {
          const query = { page: p, per_page: PER_PAGE, ...(status ? { status } : {}) };
          const { data, meta } = await call(client.GET("/v1/jobs", { params: { query } }));
          all.push(...data);
          count = meta.total ?? null;
          if (data.length < PER_PAGE) break;
        }
        setJobs(all);
        setTotal(count);
        setPages(n);
      } finally {
        setBusy(false);
      }
    });
  useEffect(() => void load(1), [status]);
  // File names for the video column: the newest videos in one call.
  useEffect(() => {
    void call(client.GET("/v1/videos", { params: { query: { per_page: 100 } } }))
      .then(({ data }) => setNames(new Map(data.map((v) => [v.id, v.filename]))))
      .catch(() => {});
  }, []);
  const running = jobs.some((j) => !isFinal(j.status));
  useEffect(() => {
    if (!running) return;
    const t = setTimeout(() => void load(pages), REFRESH_MS);
    return () => clearTimeout(t);
  }, [jobs, running]);

  const retry = (j: Job) =>
    act(async () => {
      await call(client.POST("/v1/jobs/{job_id}/retry", { params: { path: { job_id: j.id } } }));
      await load(pages);
    });

  return (
    <section class="stack">
      <h1 tabIndex={-1}>Jobs</h1>
      <div class="row">
        <label>
          Show{" "}
          <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value as "" | Status)}>
            {FILTERS.map((f) => (
              <option value={f.value}>{f.label}</option>
            ))}
          </select>
        </label>
        <button type="button" class="secondary small" onClick={() => load(pages)}>
          Refresh
        </button>
      </div>
      <ErrorLine error={error} />
      {total === 0 ? <p class="muted">No jobs{status ? ` with this status` : ""} yet.</p> : null}
      {jobs.length ? (
        <div class="scroll">
          <table class="jobs stack-on-phone">
            <caption class="sr-only">Indexing jobs</caption>
            <ColumnHeads names={["Video", "Status", "Stage", "Progress", "Started"]} actions />
            <tbody>
              {jobs.map((j) => (
                <Fragment key={j.id}>
                  <tr class={`st-${j.status}`} data-job-id={j.id}>
                    <th scope="row">
                      <a href={`#/videos/${j.video_id}`}>{names.get(j.video_id) ?? j.video_id}</a>
                    </th>
                    <td data-label="Status" class={`st-${j.status}`}>
                      {statusWords(j.status)}
                    </td>
                    <td data-label="Stage">{isFinal(j.status) ? "–" : stageWords(j.stage)}</td>
                    <td data-label="Progress">{Math.round(j.progress_pct)}%</td>
                    <td data-label="Started">{fmtDate(j.created_at)}</td>
                    <td>
                      {j.status === "failed" ? (
                        <button type="button" class="small" onClick={() => retry(j)} aria-label={`Retry job ${j.id}`}>
                          Retry
                        </button>
                      ) : null}
                    </td>
                  </tr>
                  {j.error ? (
                    <tr class="job-error-row">
                      <td colSpan={6}>
                        <JobError error={j.error} />
                      </td>
                    </tr>
                  ) : null}
                </Fragment>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <LoadMore shown={jobs.length} total={total} busy={busy} what="jobs" onMore={() => load(pages + 1)} />
    </section>
  );
}
