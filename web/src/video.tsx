/**
 * A video: player (starting at `?t=` when a search sent us here), shots with labels and what is
 * said in each (click to seek), the indexing stages that ran or were skipped; while it indexes,
 * its stage in words; a failure explained, with Retry; Delete (after confirmation).
 */
import { useEffect, useState } from "preact/hooks";
import { call, client, fmtBytes, fmtTime, local, type Schemas } from "./api.ts";
import { stageWords, statusWords } from "./explain.ts";
import { isFinal, latestJob, retryVideo } from "./live.ts";
import { ColumnHeads, ErrorLine, JobError, Player, useErrors } from "./ui.tsx";

type Shot = Schemas["Moment"] & { scene_start: number; scene_end: number };
type Said = Schemas["TranscriptExport"]["segments"][number];

/** Shots are read with GET /v1/videos/{id}/moment, one call per shot, walking the timeline; bounded (the moment route is rate-limited). */
const MAX_SHOTS = 40;

/** While the video indexes, its record is read again this often (the videos rate limit allows it). */
const POLL_MS = 3000;

export function VideoPage({ id, start }: { id: string; start?: number }) {
  const [video, setVideo] = useState<Schemas["VideoDetail"] | null>(null);
  const [shots, setShots] = useState<Shot[]>([]);
  const [said, setSaid] = useState<Said[] | null>(null);
  const { error, setError, act } = useErrors();
  const [seek, setSeek] = useState<{ t: number; n: number }>({ t: start ?? 0, n: 0 });
  const [stage, setStage] = useState<{ stage: string | null; pct: number } | null>(null);
  const [reload, setReload] = useState(0);
  const [now, setNow] = useState(0);

  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    (async () => {
      try {
        const path = { video_id: id };
        const { data } = await call(client.GET("/v1/videos/{video_id}", { params: { path } }));
        if (cancelled) return;
        setVideo(data);
        if (!isFinal(data.status)) {
          // Still indexing: show where it is, and look again in a moment.
          const job = await latestJob(id).catch(() => null);
          if (!cancelled && job) setStage({ stage: job.stage, pct: job.progress_pct });
          timer = setTimeout(() => !cancelled && setReload((n) => n + 1), POLL_MS);
          return;
        }
        setStage(null);
        if (data.status !== "ready" || !data.duration_secs) return;
        // The whole transcript in one call (GET /v1/videos/{id}/transcript); each line seeks.
        call(client.GET("/v1/videos/{video_id}/transcript", { params: { path, query: { format: "json" } } }))
          .then((r) => !cancelled && setSaid((r as { data: Schemas["TranscriptExport"] }).data.segments))
          .catch(() => !cancelled && setSaid([]));
        const found: Shot[] = [];
        let t = 0;
        while (!cancelled && found.length < MAX_SHOTS && t < data.duration_secs) {
          const { data: m } = await call(
            client.GET("/v1/videos/{video_id}/moment", {
              params: { path, query: { timestamp: Number(t.toFixed(3)) } },
            }),
          );
          if (m.scene_start == null || m.scene_end == null || m.scene_end <= t) break;
          found.push(m as Shot);
          setShots([...found]);
          t = m.scene_end + 0.001;
        }
      } catch (e) {
        if (!cancelled) setError(e);
      }
    })();
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }, [id, reload]);

  const remove = () => {
    if (!video || !confirm(`Delete the video "${video.filename}"? Its file and everything found in it are removed.`))
      return;
    void act(async () => {
      await call(client.DELETE("/v1/videos/{video_id}", { params: { path: { video_id: id } } }));
      location.hash = "#/";
    });
  };
  const retry = () =>
    act(async () => {
      await retryVideo(id);
      setReload((n) => n + 1);
    });

  const goTo = (t: number) => setSeek((s) => ({ t, n: s.n + 1 }));
  if (!video) {
    return (
      <section>
        <h1 tabIndex={-1}>Video</h1>
        <ErrorLine error={error} />
        {error ? null : <p class="muted">Loading…</p>}
      </section>
    );
  }
  const stages = Object.entries(video.stages ?? {});
  return (
    <section class="stack">
      <h1 tabIndex={-1}>{video.filename}</h1>
      <ErrorLine error={error} />
      <p class="muted">
        <span class="status">{statusWords(video.status)}</span> · {fmtTime(video.duration_secs)} · {video.width}×
        {video.height} · {video.codec ?? "?"} · {fmtBytes(video.file_size_bytes)}
        {video.has_audio ? " · audio" : " · no audio"}
      </p>
      {stage ? (
        <p class="progress-line" aria-live="polite">
          <progress max={100} value={stage.pct} aria-label="Indexing" /> {stageWords(stage.stage)}{" "}
          {Math.round(stage.pct)}%
        </p>
      ) : null}
      {video.warning ? <p class="warning">⚠ {video.warning}</p> : null}
      {video.status === "failed" ? <JobError error={video.error} /> : null}
      <div class="row">
        {video.status === "failed" ? (
          <button type="button" onClick={retry}>
            Retry indexing
          </button>
        ) : null}
        <button type="button" class="danger" onClick={remove}>
          Delete video
        </button>
      </div>
      <div class="video-layout">
        <div class="v-player">
          <Player
            src={video.playback_url}
            start={seek.t}
            nonce={seek.n}
            duration={video.duration_secs}
            hits={shots.map((s, i) => ({ start: s.scene_start, end: s.scene_end, label: `shot ${i + 1}` }))}
            onTime={setNow}
          />
        </div>
        <div class="v-shots stack">
          <h2>Shots and transcript</h2>
          {shots.length === 0 ? (
            <p class="muted">
              {video.status === "ready" ? "Reading shots…" : "Shots appear once the video is indexed."}
            </p>
          ) : null}
          <ol class="shots">
            {shots.map((s, i) => {
              const current = now >= s.scene_start && now < s.scene_end;
              return (
                <li key={i} class={current ? "current" : ""} aria-current={current ? "true" : undefined}>
                  <button
                    type="button"
                    class="shot"
                    onClick={() => goTo(s.scene_start)}
                    aria-label={`Play shot ${i + 1} from ${fmtTime(s.scene_start)}`}
                  >
                    {s.thumbnail_url ? <img src={local(s.thumbnail_url)} alt="" loading="lazy" /> : null}
                    <span class="time">
                      {fmtTime(s.scene_start)}–{fmtTime(s.scene_end)}
                    </span>
                  </button>
                  <div class="info">
                    {s.labels.length ? (
                      <span class="labels">
                        {s.labels.map((l) => (
                          <span class="tag">{l}</span>
                        ))}
                      </span>
                    ) : null}
                    {s.caption ? <span>{s.caption}</span> : null}
                    {s.on_screen_text?.length ? (
                      <span class="muted">On screen: {s.on_screen_text.map((l) => `“${l.text}”`).join(" ")}</span>
                    ) : null}
                    {s.transcript ? (
                      <button type="button" class="link transcript" onClick={() => goTo(s.scene_start)}>
                        “{s.transcript}”
                      </button>
                    ) : (
                      <span class="muted">(nothing said)</span>
                    )}
                  </div>
                </li>
              );
            })}
          </ol>
        </div>
        <div class="v-transcript stack">
          <h2>Transcript</h2>
          {said === null ? (
            <p class="muted">
              {video.status === "ready" ? "Loading…" : "The transcript appears once the video is indexed."}
            </p>
          ) : null}
          {said?.length === 0 ? (
            <p class="muted">Nothing was transcribed (no speech model, no audio, or nothing said).</p>
          ) : null}
          {said?.length ? (
            <ol class="said">
              {said.map((l, i) => {
                const current = now >= l.start && now < l.end;
                return (
                  <li key={i} class={current ? "current" : ""} aria-current={current ? "true" : undefined}>
                    <button
                      type="button"
                      class="link"
                      onClick={() => goTo(l.start)}
                      aria-label={`Play from ${fmtTime(l.start)}: ${l.text}`}
                    >
                      <span class="time">{fmtTime(l.start)}</span> {l.text}
                    </button>
                  </li>
                );
              })}
            </ol>
          ) : null}
        </div>
        <div class="v-stages stack">
          <h2>Stages</h2>
          <table class="stages">
            <ColumnHeads names={["Stage", "Outcome", "Detail"]} />
            <tbody>
              {stages.map(([name, s]) => (
                <tr key={name}>
                  <th scope="row">{name}</th>
                  <td class={`st-${s.status}`}>{s.status}</td>
                  <td class="muted">
                    {[
                      s.reason,
                      s.count != null ? `${s.count} items` : null,
                      s.took_ms != null ? `${Math.round(s.took_ms)} ms` : null,
                      s.model_id,
                    ]
                      .filter(Boolean)
                      .join(" · ")}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
    </section>
  );
}
