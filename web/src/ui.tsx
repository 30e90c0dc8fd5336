/** Small shared pieces: the error state of a page, error line, copy button, the admin list-with-secret hook, the player with its hit timeline. */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { fmtTime, local } from "./api.ts";
import { explain } from "./explain.ts";

/**
 * A page's one error state and the runner of its actions: `act(fn)` clears the error, runs `fn`
 * and keeps what it throws for the ErrorLine (answering undefined), so no page repeats a try/catch.
 */
export function useErrors() {
  const [error, setError] = useState<unknown>(null);
  const act = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setError(null);
    try {
      return await fn();
    } catch (e) {
      setError(e);
      return undefined;
    }
  }, []);
  return { error, setError, act };
}

export function ErrorLine({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error as { code?: string; message?: string };
  return (
    <p class="error" role="alert">
      {e.code ? <strong>{e.code}: </strong> : null}
      {e.message ?? String(error)}
    </p>
  );
}

/** A secret shown once: the value, a copy button, and a warning that it will not be shown again. */
export function SecretOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => ref.current?.focus(), []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      // No clipboard permission (plain http on another host): select the text for Ctrl+C instead.
      ref.current?.select();
      document.execCommand?.("copy");
    }
    setCopied(true);
  };
  return (
    <div class="secret" role="region" aria-label={label}>
      <p>
        <strong>{label}</strong> — shown only now; store it somewhere safe.
      </p>
      <div class="row">
        <input
          ref={ref}
          readOnly
          value={value}
          aria-label={label}
          class="mono grow"
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
        <button type="button" onClick={copy}>
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
      <span class="sr-only" aria-live="polite">
        {copied ? "Copied to the clipboard" : ""}
      </span>
    </div>
  );
}

/** A table's header row: a column header per name, then, with `actions`, one for the row's buttons that only screen readers name. */
export function ColumnHeads({ names, actions = false }: { names: string[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {names.map((name) => (
          <th scope="col" key={name}>
            {name}
          </th>
        ))}
        {actions ? (
          <th scope="col">
            <span class="sr-only">Actions</span>
          </th>
        ) : null}
      </tr>
    </thead>
  );
}

/** What an admin page (useSecretList) shows under its create form: the error, if any, and a new secret, once. */
export function CreateOutcome({
  error,
  secret,
  label,
  onDone,
}: {
  error: unknown;
  secret: string | null;
  label: string;
  onDone: () => void;
}) {
  return (
    <>
      <ErrorLine error={error} />
      {secret ? <SecretOnce label={label} value={secret} onDone={onDone} /> : null}
    </>
  );
}

/**
 * The admin pages (API keys, webhooks, users): a list from `list()`, a create form whose response
 * carries a secret shown once, and one error state for all of it. `create(post)` is the form's
 * onSubmit: `post` sends the form and resolves to the secret; the form is then reset, the secret
 * shown and the list reloaded.
 */
export function useSecretList<T>(list: () => Promise<T[]>) {
  const [items, setItems] = useState<T[]>([]);
  const [secret, setSecret] = useState<string | null>(null);
  const { error, setError, act } = useErrors();
  const load = () => act(async () => setItems(await list()));
  useEffect(() => void load(), []);

  const create = (post: (f: FormData) => Promise<string>) => async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    await act(async () => {
      const value = await post(f);
      form.reset();
      setSecret(value);
      setItems(await list());
    });
  };
  return {
    items,
    load,
    error,
    setError,
    act,
    secret,
    showSecret: setSecret,
    clearSecret: () => setSecret(null),
    create,
  };
}

export interface Hit {
  start: number;
  end: number;
  label: string;
}

/**
 * `<video>` on a presigned URL that starts at `start`, with a timeline bar under it marking every
 * hit; each marker is a button (keyboard and screen reader) that seeks to its moment.
 */
export function Player({
  src,
  start,
  nonce,
  hits,
  duration: knownDuration,
  onTime,
  autoPlay = false,
}: {
  src: string;
  start?: number;
  /** Start playing once seeked (the ▶ Play of a search moment). */
  autoPlay?: boolean;
  nonce?: number;
  hits: Hit[];
  duration?: number | null;
  onTime?: (t: number) => void;
}) {
  const ref = useRef<HTMLVideoElement>(null);
  const [duration, setDuration] = useState<number>(knownDuration ?? 0);
  const [now, setNow] = useState(0);
  // The URL without a #t= fragment: seeking is done here, so every hit can be reached.
  const url = local(src).replace(/#.*$/, "");
  useEffect(() => {
    const v = ref.current;
    if (!v || start == null) return;
    const seek = () => {
      v.currentTime = start;
      if (autoPlay) void v.play().catch(() => {}); // a browser may refuse without a gesture: the controls remain
    };
    if (v.readyState >= 1) seek();
    else v.addEventListener("loadedmetadata", seek, { once: true });
    return () => v.removeEventListener("loadedmetadata", seek);
  }, [url, start, nonce]);
  const seekTo = (t: number) => {
    const v = ref.current;
    if (!v) return;
    v.currentTime = t;
    void v.play().catch(() => {});
    v.focus();
  };
  const total = duration || Math.max(1, ...hits.map((h) => h.end));
  return (
    <div class="player">
      <video
        ref={ref}
        src={url}
        controls
        preload="metadata"
        playsInline
        onLoadedMetadata={(e) =>
          Number.isFinite((e.target as HTMLVideoElement).duration) &&
          setDuration((e.target as HTMLVideoElement).duration)
        }
        onTimeUpdate={(e) => {
          const t = (e.target as HTMLVideoElement).currentTime;
          setNow(t);
          onTime?.(t);
        }}
      />
      <div
        class="timeline"
        role="group"
        aria-label={`Timeline with ${hits.length} matching moment${hits.length === 1 ? "" : "s"}`}
      >
        <div class="playhead" style={{ left: `${Math.min(100, (now / total) * 100)}%` }} aria-hidden="true" />
        {hits.map((h, i) => (
          <button
            type="button"
            key={i}
            class="marker"
            style={{
              left: `${(h.start / total) * 100}%`,
              width: `${Math.max(0.8, ((h.end - h.start) / total) * 100)}%`,
            }}
            aria-label={`Play from ${fmtTime(h.start)}: ${h.label}`}
            title={`${fmtTime(h.start)} ${h.label}`}
            onClick={() => seekTo(h.start)}
          />
        ))}
      </div>
    </div>
  );
}

/** A job's or video's error: its code and message, what it means and what to do (explain.ts). */
export function JobError({ error }: { error: { code: string; message: string } | null | undefined }) {
  if (!error) return null;
  const e = explain(error.code);
  return (
    <div class="job-error" role="alert">
      <p class="error">
        <strong>{error.code}</strong>: {error.message}
      </p>
      {e ? (
        <p class="muted">
          {e.meaning} <strong>What to do:</strong> {e.fix}
        </p>
      ) : null}
    </div>
  );
}

/** "Showing n of total" and a button for the next page, while there is one. */
export function LoadMore({
  shown,
  total,
  busy,
  onMore,
  what,
}: {
  shown: number;
  total: number | null | undefined;
  busy?: boolean;
  onMore: () => void;
  what: string;
}) {
  if (total == null || total <= shown) return null;
  return (
    <div class="row load-more">
      <span class="muted">
        Showing {shown} of {total} {what}
      </span>
      <button type="button" class="secondary" disabled={busy} onClick={onMore}>
        {busy ? "Loading…" : "Load more"}
      </button>
    </div>
  );
}
