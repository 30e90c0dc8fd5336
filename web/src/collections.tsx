/** Collections: list with thumbnails and counts, create, rename, delete; upload by drag and drop with live job progress; the videos of the open collection. */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, call, client, fmtBytes, fmtTime, local, type Schemas, upload } from "./api.ts";
import { ErrorLine, useErrors } from "./ui.tsx";

type Collection = Schemas["Collection"];

interface UploadItem {
  key: number;
  name: string;
  size: number;
  phase: "uploading" | "queued" | "pending" | "processing" | "done" | "failed";
  sent: number;
  stage?: string | null;
  pct?: number;
  videoId?: string;
  error?: { code: string; message: string };
}

let nextKey = 1;
const POLL_MS = 1000;

export function CollectionsPage() {
  const [cols, setCols] = useState<Collection[] | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  const { error, setError, act } = useErrors();
  const [renaming, setRenaming] = useState<string | null>(null);
  const [uploads, setUploads] = useState<UploadItem[]>([]);
  const [videos, setVideos] = useState<Schemas["Video"][]>([]);
  // The open collection as of now, for job pollers started while another one was open.
  const openRef = useRef<string | null>(null);
  openRef.current = openId;

  const load = () =>
    act(async () => {
      const { data } = await call(client.GET("/v1/collections", { params: { query: { per_page: 100 } } }));
      setCols(data);
      setOpenId((cur) => (cur && data.some((c) => c.id === cur) ? cur : (data[0]?.id ?? null)));
    });
  const loadVideos = async (id: string | null) => {
    if (!id) return setVideos([]);
    await act(async () => {
      const { data } = await call(
        client.GET("/v1/videos", { params: { query: { collection_id: id, per_page: 100 } } }),
      );
      setVideos(data);
    });
  };
  useEffect(() => void load(), []);
  useEffect(() => void loadVideos(openId), [openId]);

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
  const track = async (key: number, jobId: string) => {
    // Bounded: a job that stays unfinished for an hour stops being polled (the list still shows it).
    for (let i = 0; i < 3600; i++) {
      try {
        const { data: job } = await call(client.GET("/v1/jobs/{job_id}", { params: { path: { job_id: jobId } } }));
        patch(key, { phase: job.status, stage: job.stage, pct: job.progress_pct, error: job.error ?? undefined });
        if (job.status === "done" || job.status === "failed") {
          void load();
          void loadVideos(openRef.current);
          return;
        }
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 429)
          return patch(key, { phase: "failed", error: { code: (e as ApiError).code, message: (e as Error).message } });
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  const addFiles = (files: FileList | File[]) => {
    if (!openId) return setError(new ApiError(0, "NO_COLLECTION", "Create or choose a collection first"));
    for (const file of Array.from(files)) {
      const key = nextKey++;
      setUploads((list) => [{ key, name: file.name, size: file.size, phase: "uploading", sent: 0 }, ...list]);
      upload(file, openId, (f) => patch(key, { sent: f }))
        .then((r) => {
          patch(key, { phase: "queued", sent: 1, videoId: r.video_id });
          return track(key, r.job_id);
        })
        .catch((e: ApiError) => patch(key, { phase: "failed", error: { code: e.code, message: e.message } }));
    }
  };
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
              onChange={(e) => addFiles((e.target as HTMLInputElement).files ?? [])}
            />
          </label>
          {uploads.length ? (
            <ul class="uploads" aria-live="polite" aria-label="Uploads">
              {uploads.map((u) => (
                <li key={u.key} class={`upload ${u.phase}`}>
                  <span class="name">{u.name}</span> <span class="muted">{fmtBytes(u.size)}</span>
                  {u.phase === "uploading" ? (
                    <>
                      <progress max={1} value={u.sent} aria-label={`Uploading ${u.name}`} />{" "}
                      <span>uploading {Math.round(u.sent * 100)}%</span>
                    </>
                  ) : u.phase === "failed" ? (
                    <span class="error">
                      failed — <strong>{u.error?.code}</strong>: {u.error?.message}
                    </span>
                  ) : u.phase === "done" ? (
                    <span class="ok">
                      done, searchable {u.videoId ? <a href={`#/videos/${u.videoId}`}>open video</a> : null}
                    </span>
                  ) : (
                    <>
                      <progress max={100} value={u.pct ?? 0} aria-label={`Indexing ${u.name}`} />{" "}
                      <span class="status">
                        {u.phase}
                        {u.stage ? ` · ${u.stage}` : ""} {Math.round(u.pct ?? 0)}%
                      </span>
                    </>
                  )}
                </li>
              ))}
            </ul>
          ) : null}
          <h2>Videos</h2>
          {videos.length === 0 ? <p class="muted">No videos in this collection yet.</p> : null}
          <ul class="cards" aria-label={`Videos in ${open.name}`}>
            {videos.map((v) => (
              <li class="card" key={v.id}>
                <a href={`#/videos/${v.id}`} class="video-link">
                  {v.thumbnail_url ? (
                    <img src={local(v.thumbnail_url)} alt="" loading="lazy" class="poster" />
                  ) : (
                    <div class="poster" />
                  )}
                  <span class="title">{v.filename}</span>
                </a>
                <p class="muted">
                  {v.status} · {fmtTime(v.duration_secs)} · {fmtBytes(v.file_size_bytes)}
                </p>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </section>
  );
}
