/** Transcript documents (SPEC §11): pure formatters, so the timestamp rules are unit-tested. */

export interface Segment {
  start: number;
  end: number;
  text: string;
}

export type TranscriptFormat = "json" | "srt" | "vtt";

/** `HH:MM:SS<sep>mmm` from seconds, rounded to the millisecond (SRT uses ",", WebVTT "."). */
export function timestamp(secs: number, sep: "," | "."): string {
  const ms = Math.max(0, Math.round(secs * 1000));
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(h)}:${pad(m)}:${pad(s)}${sep}${pad(ms % 1000, 3)}`;
}

/**
 * A cue's text may not contain a blank line (it would end the cue) and WebVTT forbids "-->" in
 * it; whitespace runs collapse to one space.
 */
const cueText = (t: string) => t.replace(/\s+/g, " ").replace(/-->/g, "->").trim();

/** Cues with no text are dropped; an end before the start is raised to the start. */
const cues = (segments: Segment[]) =>
  segments
    .map((s) => ({ start: s.start, end: Math.max(s.start, s.end), text: cueText(s.text) }))
    .filter((s) => s.text !== "");

export function toSrt(segments: Segment[]): string {
  return cues(segments)
    .map((c, i) => `${i + 1}\n${timestamp(c.start, ",")} --> ${timestamp(c.end, ",")}\n${c.text}\n`)
    .join("\n");
}

export function toVtt(segments: Segment[]): string {
  const body = cues(segments)
    .map((c) => `${timestamp(c.start, ".")} --> ${timestamp(c.end, ".")}\n${c.text}\n`)
    .join("\n");
  return body ? `WEBVTT\n\n${body}` : "WEBVTT\n";
}
