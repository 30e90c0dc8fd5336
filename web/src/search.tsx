/**
 * Search: text and/or a reference image (previewed), modes, collection, min score, show hidden;
 * moments as thumbnails with scores and matched text; ▶ Play starts a player at the moment and
 * marks every hit; up/down feedback; "Load more" for the next page of videos; an empty answer
 * says what to try (the server's hints).
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, call, client, fmtTime, local, type Schemas } from "./api.ts";
import { ErrorLine, LoadMore, Player, useErrors } from "./ui.tsx";

const MODES = [
  { id: "video", label: "Frames" },
  { id: "scene", label: "Scenes" },
  { id: "transcript", label: "Speech" },
  { id: "ocr", label: "On-screen text" },
];
/** Modes that search words, not pictures: they need a text query. */
const TEXT_MODES = ["transcript", "ocr"];

type Segment = Schemas["SearchSegment"];
type Result = Schemas["SearchResultVideo"];
type Meta = Schemas["SearchMeta"];
type SearchBody = Schemas["SearchRequest"];
/** Videos per page of results. */
const PER_PAGE = 20;

export function SearchPage() {
  const [cols, setCols] = useState<{ id: string; name: string }[]>([]);
  const [results, setResults] = useState<Result[] | null>(null);
  const [meta, setMeta] = useState<Meta | null>(null);
  const { error, setError, act } = useErrors();
  const [busy, setBusy] = useState(false);
  /** The inline player: which video, from when; `n` makes a second click on the same moment seek again. */
  const [playing, setPlaying] = useState<{ videoId: string; start: number; n: number } | null>(null);
  const play = (videoId: string, start: number) => setPlaying((p) => ({ videoId, start, n: (p?.n ?? 0) + 1 }));
  const [lastQuery, setLastQuery] = useState("");
  /** Empty: the server's per-mode thresholds; a number replaces them for this search (0 = best matches, whatever their score). */
  const [minScore, setMinScore] = useState<number | null>(null);
  const [note, setNote] = useState("");
  /** The last search as sent (page 1), for "Load more". */
  const [asked, setAsked] = useState<{ body: SearchBody; image: File | null } | null>(null);
  const [preview, setPreview] = useState<{ url: string; name: string } | null>(null);
  useEffect(() => () => preview && URL.revokeObjectURL(preview.url), [preview]);

  useEffect(() => {
    void act(async () =>
      setCols((await call(client.GET("/v1/collections", { params: { query: { per_page: 100 } } }))).data),
    );
  }, []);

  /** One page of a search: JSON, or multipart when it carries an image (the same fields either way). */
  const send = (body: SearchBody, image: File | null, page: number) => {
    const paged = { ...body, page };
    if (!image) return call(client.POST("/v1/search", { body: paged }));
    const form = new FormData();
    for (const [k, v] of Object.entries(paged))
      if (Array.isArray(v)) for (const x of v) form.append(k, String(x));
      else if (v !== undefined) form.append(k, String(v));
    form.append("image", image);
    return call(client.POST("/v1/search", { body: paged, bodySerializer: () => form }));
  };

  const run = async (form: HTMLFormElement) => {
    const f = new FormData(form);
    const query = String(f.get("query") ?? "").trim();
    const picked = f.get("image");
    const image = picked instanceof File && picked.size > 0 ? picked : null;
    // All modes ticked = the server's default (which leaves out speech for an image-only search);
    // otherwise the ticked ones, minus speech when there are no words to look for.
    const ticked = f.getAll("modes").map(String) as NonNullable<SearchBody["modes"]>;
    if (ticked.length === 0) return setError(new ApiError(0, "NO_MODE", "Tick at least one mode"));
    let modes: SearchBody["modes"];
    if (ticked.length < MODES.length) {
      modes = ticked.filter((m) => query || !TEXT_MODES.includes(m));
      if (modes.length === 0)
        return setError(new ApiError(0, "NEEDS_TEXT", "Speech and on-screen text search need words to look for"));
    }
    const body: SearchBody = {
      per_page: PER_PAGE,
      ...(query ? { query } : {}),
      ...(modes ? { modes } : {}),
      ...(f.get("collection_id") ? { collection_id: String(f.get("collection_id")) } : {}),
      ...(f.get("include_hidden") ? { include_hidden: true } : {}),
      ...(minScore !== null ? { min_score: minScore } : {}),
    };
    setBusy(true);
    setPlaying(null);
    await act(async () => {
      const r = await send(body, image, 1);
      setResults(r.data);
      setMeta(r.meta);
      setLastQuery(query);
      setAsked({ body, image });
    });
    setBusy(false);
  };

  const more = async () => {
    if (!asked || !meta) return;
    setBusy(true);
    await act(async () => {
      const r = await send(asked.body, asked.image, (meta.page ?? 1) + 1);
      setResults((cur) => [...(cur ?? []), ...r.data.filter((v) => !cur?.some((c) => c.video_id === v.video_id))]);
      setMeta(r.meta);
    });
    setBusy(false);
  };

  const feedback = async (r: Result, s: Segment, signal: "up" | "down") => {
    await act(async () => {
      await call(
        client.POST("/v1/search/feedback", {
          body: {
            video_id: r.video_id,
            timestamp_start: s.timestamp_start,
            signal,
            query: lastQuery || undefined,
            raw_score: s.raw_score,
            threshold_key: s.threshold_key,
          },
        }),
      );
      setNote(
        signal === "down"
          ? `Hidden the moment at ${fmtTime(s.timestamp_start)} of ${r.filename}`
          : `Marked the moment at ${fmtTime(s.timestamp_start)} as a good match`,
      );
      if (signal === "down")
        setResults((list) =>
          list!.map((x) =>
            x === r ? { ...x, segments: x.segments.map((y) => (y === s ? { ...y, hidden: true } : y)) } : x,
          ),
        );
    });
  };
  const unhide = async (r: Result, s: Segment) => {
    await act(async () => {
      await call(
        client.DELETE("/v1/search/feedback", {
          params: { query: { video_id: r.video_id, timestamp_start: s.timestamp_start } },
        }),
      );
      setNote(`The moment at ${fmtTime(s.timestamp_start)} is shown again`);
      setResults((list) =>
        list!.map((x) =>
          x === r ? { ...x, segments: x.segments.map((y) => (y === s ? { ...y, hidden: false } : y)) } : x,
        ),
      );
    });
  };

  return (
    <section class="stack">
      <h1 tabIndex={-1}>Search</h1>
      <form
        class="card stack"
        onSubmit={(e) => {
          e.preventDefault();
          void run(e.target as HTMLFormElement);
        }}
      >
        <div class="row">
          <label class="grow">
            <span class="sr-only">What to find</span>
            <input
              name="query"
              type="search"
              placeholder="Describe a moment, or quote words that were said"
              maxLength={1000}
            />
          </label>
          <button type="submit" disabled={busy}>
            {busy ? "Searching…" : "Search"}
          </button>
        </div>
        <div class="row wrap">
          <label>
            Reference image{" "}
            <input
              name="image"
              type="file"
              accept="image/jpeg,image/png"
              onChange={(e) => {
                const file = (e.target as HTMLInputElement).files?.[0];
                setPreview(file ? { url: URL.createObjectURL(file), name: file.name } : null);
              }}
            />
          </label>
          {preview ? (
            <figure class="image-preview">
              <img src={preview.url} alt={`Reference image: ${preview.name}`} />
              <figcaption class="muted">{preview.name}</figcaption>
            </figure>
          ) : null}
          <label>
            Collection{" "}
            <select name="collection_id">
              <option value="">All collections</option>
              {cols.map((c) => (
                <option value={c.id}>{c.name}</option>
              ))}
            </select>
          </label>
          <fieldset class="row">
            <legend>Modes</legend>
            {MODES.map((m) => (
              <label>
                <input type="checkbox" name="modes" value={m.id} defaultChecked /> {m.label}
              </label>
            ))}
          </fieldset>
          <label>
            Min score{" "}
            <input
              type="number"
              min={0}
              max={1}
              step={0.05}
              value={minScore ?? ""}
              placeholder="auto"
              onInput={(e) => {
                const v = (e.target as HTMLInputElement).value;
                setMinScore(v === "" ? null : Math.min(1, Math.max(0, Number(v) || 0)));
              }}
              class="narrow"
            />
          </label>
          <label>
            <input type="checkbox" name="include_hidden" value="true" /> Show hidden
          </label>
        </div>
      </form>
      <ErrorLine error={error} />
      <p class="sr-only" aria-live="polite">
        {note}
      </p>
      {results ? (
        <p class="muted" aria-live="polite">
          {meta?.total ?? results.length} matching video{(meta?.total ?? results.length) === 1 ? "" : "s"}
          {meta?.skipped_modes && Object.keys(meta.skipped_modes).length
            ? ` (skipped: ${Object.entries(meta.skipped_modes)
                .map(([m, why]) => `${m} — ${why}`)
                .join("; ")})`
            : ""}
        </p>
      ) : null}
      {results && meta?.total === 0 && meta.hints?.length ? (
        <div class="card hints" role="status">
          <p>
            <strong>No moment matched.</strong> What to try:
          </p>
          <ul>
            {meta.hints.map((h) => (
              <li key={h.code} data-hint={h.code}>
                {h.message}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      <ol class="results">
        {results?.map((r) => {
          const segs = r.segments;
          if (segs.length === 0) return null;
          const hits = segs
            .filter((s) => !s.hidden)
            .map((s) => ({
              start: s.timestamp_start,
              end: s.timestamp_end,
              label: `${s.type} ${Math.round(s.score * 100)}%`,
            }));
          return (
            <li class="result card" key={r.video_id}>
              <h2>
                <a href={`#/videos/${r.video_id}?t=${segs[0].timestamp_start}`}>{r.filename}</a>
              </h2>
              {playing?.videoId === r.video_id ? (
                <Player src={segs[0].video_url} start={playing.start} nonce={playing.n} hits={hits} autoPlay />
              ) : null}
              <ul class="moments" aria-label={`Moments in ${r.filename}`}>
                {segs.map((s) => (
                  <li class={`moment${s.hidden ? " hidden-seg" : ""}`} key={`${s.type}-${s.timestamp_start}`}>
                    <button
                      type="button"
                      class="thumb"
                      onClick={() => play(r.video_id, s.timestamp_start)}
                      aria-label={`Play ${r.filename} from ${fmtTime(s.timestamp_start)}`}
                    >
                      {s.thumbnail_url ? (
                        <img src={local(s.thumbnail_url)} alt="" loading="lazy" />
                      ) : (
                        <span class="noimg" />
                      )}
                      <span class="time">{fmtTime(s.timestamp_start)}</span>
                    </button>
                    <div class="info">
                      <span class="score" title={`raw ${s.raw_score.toFixed(3)} · ${s.threshold_key}`}>
                        {Math.round(s.score * 100)}% <span class="muted">{s.type}</span>
                        {s.hidden ? <span class="tag">hidden</span> : null}
                      </span>
                      {s.text_content ? <q class="text">{s.text_content}</q> : null}
                      <span class="row">
                        <button
                          type="button"
                          class="small play"
                          onClick={() => play(r.video_id, s.timestamp_start)}
                          aria-label={`▶ Play from ${fmtTime(s.timestamp_start)}`}
                        >
                          ▶ Play
                        </button>
                        <button
                          type="button"
                          class="small secondary"
                          onClick={() => feedback(r, s, "up")}
                          aria-label={`Good match at ${fmtTime(s.timestamp_start)}`}
                        >
                          ▲ Good
                        </button>
                        {s.hidden ? (
                          <button type="button" class="small secondary" onClick={() => unhide(r, s)}>
                            Unhide
                          </button>
                        ) : (
                          <button
                            type="button"
                            class="small secondary"
                            onClick={() => feedback(r, s, "down")}
                            aria-label={`Bad match at ${fmtTime(s.timestamp_start)}: hide it`}
                          >
                            ▼ Hide
                          </button>
                        )}
                      </span>
                    </div>
                  </li>
                ))}
              </ul>
            </li>
          );
        })}
      </ol>
      {results ? (
        <LoadMore shown={results.length} total={meta?.total} busy={busy} what="videos" onMore={() => void more()} />
      ) : null}
    </section>
  );
}
