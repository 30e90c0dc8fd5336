/**
 * Collections: list with thumbnails and counts, create, rename, delete; upload by drag and drop
 * with live job progress (stages in words, failures explained); the videos of the open collection
 * (videos.tsx). Job status comes from one server feed (live.ts), so it survives a reload.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, call, client, fmtBytes, local, type Schemas, upload } from "./api.ts";
import { stageWords, statusWords } from "./explain.ts";
import { type Job, useJobsFeed } from "./live.ts";
import { ErrorLine, JobError, useErrors } from "./ui.tsx";
import { VideoList } from "./videos.tsx";

type Collection = Schemas["Collection"];

interface UploadItem {
  key: number;
  name: string;
  size: number;
  phase: "uploading" | "queued" | "pending" | "processing" | "done" | "failed";
  sent: number;
  videoId?: string;
  jobId?: string;
  /** The collection already held these bytes: the row is that video. */
  duplicate?: boolean;
  error?: { code: string; message: string };
}

let nextKey = 1;

export function CollectionsPage() {
  const [cols, setCols] = useState<Collection[] | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  const { error, setError, act } = useErrors();
  const [renaming, setRenaming] = useState<string | null>(null);
  const [uploads, setUploads] = useState<UploadItem[]>([]);
  const [refresh, setRefresh] = useState(0);
  const [listRunning, setListRunning] = useState(false);
  const [finished, setFinished] = useState<Job | null>(null);
  const uploadsRunning = uploads.some((u) => u.phase !== "done" && u.phase !== "failed");
  const jobs = useJobsFeed(listRunning || uploadsRunning, (job) => {
    setFinished(job);
    void load(); // counts and posters of the collections
  });

  const load = () =>
    act(async () => {
      const { data } = await call(client.GET("/v1/collections", { params: { query: { per_page: 100 } } }));
      setCols(data);
      setOpenId((cur) => (cur && data.some((c) => c.id === cur) ? cur : (data[0]?.id ?? null)));
    });
  useEffect(() => void load(), []);

  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const name = String(new FormData(form).get("name") ?? "");
    await act(async () => {
      const { data } = await call(client.POST("/v1/collections", { body: { name } }));
      form.reset();
      await load();
      setOpenId(data.id);
    });
  };
  const rename = async (e: Event, id: string) => {
    e.preventDefault();
    const name = String(new FormData(e.target as HTMLFormElement).get("name") ?? "");
    await act(async () => {
      await call(
        client.PATCH("/v1/collections/{collection_id}", { params: { path: { collection_id: id } }, body: { name } }),
      );
      setRenaming(null);
      await load();
    });
  };
  const remove = async (c: Collection) => {
    if (!confirm(`Delete the collection "${c.name}" and its ${c.video_count} video(s)? This cannot be undone.`)) return;
    await act(async () => {
      await call(client.DELETE("/v1/collections/{collection_id}", { params: { path: { collection_id: c.id } } }));
      await load();
    });
  };

  const patch = (key: number, p: Partial<UploadItem>) =>
    setUploads((list) => list.map((u) => (u.key === key ? { ...u, ...p } : u)));
  const addFiles = (files: FileList | File[]) => {
    if (!openId) return setError(new ApiError(0, "NO_COLLECTION", "Create or choose a collection first"));
    for (const file of Array.from(files)) {
      const key = nextKey++;
      setUploads((list) => [{ key, name: file.name, size: file.size, phase: "uploading", sent: 0 }, ...list]);
      upload(file, openId, (f) => patch(key, { sent: f }))
        .then((r) => {
          patch(key, {
            phase: r.duplicate && r.status !== "queued" ? (r.status === "failed" ? "failed" : "done") : "queued",
            sent: 1,
            videoId: r.video_id,
            jobId: r.job_id ?? undefined,
            duplicate: r.duplicate,
          });
          setRefresh((n) => n + 1);
        })
        .catch((e: ApiError) => patch(key, { phase: "failed", error: { code: e.code, message: e.message } }));
    }
  };
  // An upload row whose job has ended keeps that end (the feed then stops when nothing else runs).
  useEffect(() => {
    setUploads((list) =>
      list.map((u) => {
        const j = u.videoId ? jobs.get(u.videoId) : undefined;
        if (!j || u.phase === "uploading" || u.phase === "done" || u.phase === "failed") return u;
        if (u.jobId && j.id !== u.jobId) return u;
        return j.status === "done" || j.status === "failed"
          ? { ...u, phase: j.status, error: j.error ?? undefined }
          : u;
      }),
    );
  }, [jobs]);
  // Upload rows follow their job in the feed.
  const shown = uploads.map((u) => {
    const j = u.videoId ? jobs.get(u.videoId) : undefined;
    if (!j || u.phase === "uploading" || (u.jobId && j.id !== u.jobId)) return { u, j: undefined };
    return { u: { ...u, phase: j.status, error: j.error ?? u.error }, j };
  });
  const [over, setOver] = useState(false);
  const open = cols?.find((c) => c.id === openId);

  return (
    <section class="stack">
      <h1 tabIndex={-1}>Collections</h1>
      <ErrorLine error={error} />
      <form class="row" onSubmit={create}>
        <label class="grow">
          <span class="sr-only">New collection name</span>
          <input name="name" placeholder="New collection name" required maxLength={255} />
        </label>
        <button type="submit">Create collection</button>
      </form>
      {cols && cols.length === 0 ? (
        <p class="muted">No collections yet: create one, then drop videos into it.</p>
      ) : null}
      <ul class="cards" aria-label="Collections">
        {cols?.map((c) => (
          <li class={`card collection${c.id === openId ? " open" : ""}`} key={c.id}>
            <div class="thumbs" aria-hidden="true">
              {c.thumbnail_urls.slice(0, 4).map((u) => (
                <img src={local(u)} alt="" loading="lazy" />
              ))}
            </div>
            {renaming === c.id ? (
              <form class="row" onSubmit={(e) => rename(e, c.id)}>
                <label class="grow">
                  <span class="sr-only">New name for {c.name}</span>
                  <input name="name" defaultValue={c.name} required maxLength={255} autoFocus />
                </label>
                <button type="submit">Save</button>
                <button type="button" class="secondary" onClick={() => setRenaming(null)}>
                  Cancel
                </button>
              </form>
            ) : (
              <button type="button" class="link title" aria-pressed={c.id === openId} onClick={() => setOpenId(c.id)}>
                {c.name}
              </button>
            )}
            <p class="muted">
              {c.video_count} video{c.video_count === 1 ? "" : "s"}
            </p>
            <div class="row">
              <button
                type="button"
                class="secondary small"
                onClick={() => setRenaming(c.id)}
                aria-label={`Rename ${c.name}`}
              >
                Rename
              </button>
              <button type="button" class="danger small" onClick={() => remove(c)} aria-label={`Delete ${c.name}`}>
                Delete
              </button>
            </div>
          </li>
        ))}
      </ul>

      {open ? (
        <section class="stack" aria-labelledby="upload-h">
          <h2 id="upload-h">Upload to “{open.name}”</h2>
          <label
            class={`drop${over ? " over" : ""}`}
            onDragOver={(e) => (e.preventDefault(), setOver(true))}
            onDragLeave={() => setOver(false)}
            onDrop={(e) => {
              e.preventDefault();
              setOver(false);
              if (e.dataTransfer?.files) addFiles(e.dataTransfer.files);
            }}
          >
            <span>Drop video files here, or choose files</span>
            <input
              type="file"
              accept="video/*,.mkv,.avi,.mov,.mpg,.mpeg,.webm,.mp4"
              multiple
              onChange={(e) => {
                const input = e.target as HTMLInputElement;
                addFiles(Array.from(input.files ?? []));
                // Emptied, so choosing the same file again is a change too (a second upload of it).
                input.value = "";
              }}
            />
          </label>
          {shown.length ? (
            <ul class="uploads" aria-live="polite" aria-label="Uploads">
              {shown.map(({ u, j }) => (
                <li key={u.key} class={`upload ${u.phase}`}>
                  <span class="name">{u.name}</span> <span class="muted">{fmtBytes(u.size)}</span>
                  {u.phase === "uploading" ? (
                    <>
                      <progress max={1} value={u.sent} aria-label={`Uploading ${u.name}`} />{" "}
                      <span>uploading {Math.round(u.sent * 100)}%</span>
                    </>
                  ) : u.phase === "failed" ? (
                    <div class="upload-failed">
                      <JobError error={u.error ?? { code: "FAILED", message: "The upload failed" }} />
                      {u.videoId ? <a href={`#/videos/${u.videoId}`}>open video</a> : null}
                    </div>
                  ) : u.phase === "done" ? (
                    <span class="ok">
                      {u.duplicate ? "already in this collection (the same file), " : "done, "}searchable{" "}
                      {u.videoId ? <a href={`#/videos/${u.videoId}`}>open video</a> : null}
                    </span>
                  ) : (
                    <>
                      <progress max={100} value={j?.progress_pct ?? 0} aria-label={`Indexing ${u.name}`} />{" "}
                      <span class="status">
                        {statusWords(u.phase)}
                        {j?.stage ? ` · ${stageWords(j.stage)}` : ""} {Math.round(j?.progress_pct ?? 0)}%
                      </span>
                    </>
                  )}
                </li>
              ))}
            </ul>
          ) : null}
          <VideoList
            collectionId={open.id}
            collectionName={open.name}
            refresh={refresh}
            jobs={jobs}
            finished={finished}
            onRunning={setListRunning}
          />
        </section>
      ) : null}
    </section>
  );
}
