import { rename, rm } from "node:fs/promises";
import { threadId } from "node:worker_threads";
import { jpegCodecArgs, thumbnailFilters } from "./filters.ts";
import { runTool, type MediaBins } from "./process.ts";
import { nonEmpty } from "./thumbnails.ts";

/** How far a file's video can be read, when that is short of what its container claims. */
export interface PartialSpan {
  /** End of the last video packet in the file (seconds): decoding stops there. */
  endSecs: number;
  /** What the container's index claims. */
  claimedSecs: number;
}

/** A file whose video ends this much before its claimed length is partial (a truncated upload). */
const SHORT_BY_SECS = 1;
/** The tail looked at first: a complete file answers from here without reading the rest. */
const TAIL_SECS = 5;

/**
 * Whether the video stream really reaches the length the container claims (issue 22: a truncated
 * MP4 keeps its index, which still says 10 s, while its data stops after 3). Reads packets, never
 * decodes: first only the last few seconds (a seek through the index), which a complete file
 * answers at once; only when they are missing, every packet from the start, to find where the
 * data ends. Null when the file is complete or its length is unknown. A damaged stretch in the
 * middle is not this: the decoders skip it (media/frames.ts counts it).
 */
export async function readablePart(
  bins: MediaBins,
  file: string,
  claimedSecs: number | null,
  opts: { timeoutMs?: number } = {},
): Promise<PartialSpan | null> {
  if (!claimedSecs || !(claimedSecs > SHORT_BY_SECS)) return null;
  const tail = await packetsFrom(bins, file, Math.max(0, claimedSecs - TAIL_SECS), claimedSecs, opts);
  // The video stream's own length where the container says it: a video shorter than the audio
  // is not a truncated file.
  const claimed = Math.min(claimedSecs, tail.streamSecs ?? claimedSecs);
  if (tail.endSecs !== null && tail.endSecs >= claimed - SHORT_BY_SECS) return null;
  // The tail's seek found nothing (its data is gone) or stopped early: read from the start.
  const whole = await packetsFrom(bins, file, null, claimedSecs, opts);
  if (whole.endSecs !== null && whole.endSecs >= claimed - SHORT_BY_SECS) return null;
  return { endSecs: Math.max(0, whole.endSecs ?? 0), claimedSecs: claimed };
}

/**
 * The end of the last video packet read from `fromSecs` on (from the start when null; null when
 * none could be read), and the stream's claimed duration. A seek lands on the keyframe before
 * `fromSecs`, so this reads at most one GOP more than asked.
 */
async function packetsFrom(
  bins: MediaBins,
  file: string,
  fromSecs: number | null,
  claimedSecs: number,
  opts: { timeoutMs?: number },
): Promise<{ endSecs: number | null; streamSecs: number | null }> {
  const interval =
    fromSecs === null ? [] : ["-read_intervals", `${fromSecs.toFixed(3)}%+${Math.ceil(claimedSecs - fromSecs + 60)}`];
  const run = await runTool(
    bins.ffprobe,
    [
      "-v",
      "error",
      "-select_streams",
      "v:0",
      ...interval,
      "-show_entries",
      "stream=duration:packet=pts_time,duration_time",
      "-of",
      "csv",
      file,
    ],
    { timeoutMs: opts.timeoutMs ?? 120_000, maxStdoutBytes: 96 * 1024 * 1024 },
  );
  let end: number | null = null;
  let stream: number | null = null;
  for (const line of new TextDecoder().decode(run.stdout).split("\n")) {
    const [section, a, b] = line.split(",");
    const pts = Number.parseFloat(a);
    if (!Number.isFinite(pts)) continue;
    if (section === "stream") stream = pts;
    else if (section === "packet") {
      const e = pts + (Number.isFinite(Number.parseFloat(b)) ? Number.parseFloat(b) : 0);
      if (end === null || e > end) end = e;
    }
  }
  return { endSecs: end, streamSecs: stream };
}

/** `partial: decoded 0:00–0:03 of 0:10`: the warning a partly decoded video carries. */
export function partialWarning(p: PartialSpan): string {
  const clock = (s: number) => {
    const t = Math.max(0, Math.round(s));
    const h = Math.floor(t / 3600);
    const m = Math.floor((t % 3600) / 60);
    const ss = String(t % 60).padStart(2, "0");
    return h ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
  };
  return `partial: decoded 0:00–${clock(p.endSecs)} of ${clock(p.claimedSecs)}`;
}

/**
 * One JPEG of the first frame at or after `atSecs`, decoded from the start without seeking: the
 * way to a picture of a file whose index is broken (a truncated Matroska's seek reads its missing
 * cues and fails, even at 0 s). Costs a decode up to `atSecs`, so it is the fallback, used only
 * for a thumbnail the seeking path could not make. Written to a temp name and renamed. Returns
 * whether a frame was written.
 */
export async function thumbnailFromStart(
  bins: MediaBins,
  file: string,
  atSecs: number,
  outPath: string,
  opts: { width: number; hdr: boolean; timeoutMs?: number },
): Promise<boolean> {
  const tmp = `${outPath}.tmp-${process.pid}-${threadId}-${Math.random().toString(36).slice(2)}`;
  try {
    const select = `select='gte(t,${Math.max(0, atSecs).toFixed(3)})'`;
    const exit = await runTool(
      bins.ffmpeg,
      [
        "-hide_banner",
        "-nostdin",
        "-nostats",
        "-v",
        "error",
        "-y",
        "-threads",
        "1",
        "-i",
        file,
        "-map",
        "0:v:0",
        "-vf",
        [select, ...thumbnailFilters(opts.width, opts.hdr)].join(","),
        "-frames:v",
        "1",
        ...jpegCodecArgs(),
        "-update",
        "1",
        "-f",
        "image2",
        tmp,
      ],
      { timeoutMs: opts.timeoutMs ?? 60_000 },
    );
    if (exit.code !== 0 || !(await nonEmpty(tmp))) return false;
    await rename(tmp, outPath);
    return true;
  } finally {
    await rm(tmp, { force: true });
  }
}
