import { decodeLimits } from "./bounds.ts";
import { runTool, type MediaBins } from "./process.ts";

/**
 * Decoder shortcuts for a full decode whose consumers need only *some* pictures (a 1 fps sample and
 * a scene score between neighbouring pictures), never every one.
 *
 * - "noref": `-skip_frame noref -skip_loop_filter noref` — pictures nothing is predicted from are
 *   not decoded at all. By definition no kept picture depends on a skipped one, so what is decoded
 *   is bit-identical to a plain decode (test/media/decode-skip.test.ts checks it per codec); the
 *   timestamps are the pictures' own. Honoured by H.264 (nal_ref_idc = 0: x264's non-reference
 *   B-frames; 28 of 50 pictures decoded with its defaults), HEVC (the *_N NAL types; x265 veryfast
 *   21 of 50), MPEG-4 part 2 and MPEG-1/2 (B-frames; 18 of 50 with -bf 2). VP8/VP9 (libvpx)
 *   refresh a reference with every shown frame, so nothing is skipped there; codecs that do not
 *   implement the option decode everything.
 * - "bidir": every B picture, reference B-pictures included. Faster again (60 s 1080p from
 *   x264 veryfast: 3.9 vs 6.1 CPU-s) but exact only where no kept picture is predicted from a B
 *   one. x264 with `ref=1` (presets veryfast and faster-still, or -refs 1) predicts each P picture
 *   from the previous P/I only: bidir is bit-exact there (test/media/decode-skip.test.ts). With
 *   `ref` ≥ 2 (x264's default preset: 3) 16 of the 18 pictures it keeps differ; with x265, 9 of 11.
 *   So `fullDecodeSkip` picks it only for H.264 whose x264 settings say ref=1.
 *
 * The deblocking (loop) filter is a separate choice, `LoopFilter`.
 */
export type DecodeSkip = "none" | "noref" | "bidir";

/**
 * Whether a full decode runs the codec's in-loop deblocking filter on the pictures it decodes.
 * - "exact": yes; every decoded picture is bit-identical to a plain decode's (the OCR decode, and
 *   anything that promises exact pictures).
 * - "skip": `-skip_loop_filter all`, no picture is filtered (H.264 deblocking, HEVC deblocking and
 *   SAO, VP8/VP9). Saves 15–22 % of a 1080p H.264 decode's CPU, but P pictures are then predicted
 *   from unfiltered references, so the pictures drift from the exact ones through a GOP — on the
 *   250-frame bench clip every compared picture differs. What that drift is worth where it is
 *   consumed (the 224 px CLIP input, the 320 px thumbnails, the 160 px cut score) is measured by
 *   bench/loopfilter-drift.ts (BENCHMARKS.md "Skipping the loop filter"); the visual decode uses it
 *   only as config `frame_loop_filter` allows.
 */
export type LoopFilter = "exact" | "skip";

/** Config `frame_loop_filter`: a LoopFilter for every full visual decode, or "auto" (`loopFilterFor`). */
export type LoopFilterPolicy = "auto" | LoopFilter;

/**
 * "auto" skips the loop filter from this shorter side up (of the upright picture, probe's
 * width/height: 720p and larger): there the 224 px CLIP input is shrunk ≥ 3.2× and a 320 px
 * thumbnail of 16:9 ≥ 4×, which averages the unfiltered block edges away (60 s 1080p, 250-frame
 * GOPs: 40 dB against the exact pictures at 224 px, less error than the thumbnails' own JPEG
 * encode) while 15–22 % of the decode's CPU is saved. Smaller
 * video keeps it: its thumbnail is near native size, the drift shows more (a 360p clip: 33 dB), and
 * its decode costs little anyway.
 */
export const SKIP_LOOP_FILTER_MIN_SIDE = 720;

/** What `policy` means for a full decode of a video of this display size. */
export function loopFilterFor(policy: LoopFilterPolicy, width: number | null, height: number | null): LoopFilter {
  if (policy !== "auto") return policy;
  return width && height && Math.min(width, height) >= SKIP_LOOP_FILTER_MIN_SIDE ? "skip" : "exact";
}

/**
 * ffmpeg input options (before `-i`) for a decode that may skip pictures as `skip` allows and the
 * loop filter as `loopFilter` allows (default "exact").
 */
export function decodeSkipArgs(skip: DecodeSkip | undefined, loopFilter: LoopFilter = "exact"): string[] {
  const frames = skip && skip !== "none" ? skip : null;
  const filter = loopFilter === "skip" ? "all" : frames;
  return [...(frames ? ["-skip_frame", frames] : []), ...(filter ? ["-skip_loop_filter", filter] : [])];
}

/**
 * The settings x264 wrote into the stream (an SEI message in the first access unit: "x264 - core
 * 157 … options: cabac=1 ref=1 … bframes=3 b_pyramid=2 …"), as name → value; null when the first
 * packet carries none (another encoder, or not H.264). Reads one packet, no decoding (~50 ms).
 */
export async function readX264Options(bins: MediaBins, file: string): Promise<Record<string, string> | null> {
  const exit = await runTool(
    bins.ffmpeg,
    [
      "-hide_banner",
      "-nostdin",
      "-v",
      "error",
      ...decodeLimits(bins),
      "-i",
      file,
      "-map",
      "0:v:0",
      "-c",
      "copy",
      "-frames:v",
      "1",
      "-f",
      "h264",
      "pipe:1",
    ],
    {
      timeoutMs: 30_000,
    },
  ).catch(() => null);
  if (!exit || exit.code !== 0 || !exit.stdout) return null;
  return parseX264Options(exit.stdout);
}

/** The `options:` list of an x264 SEI found in `bytes`, or null. (ASCII never contains the 00 00 03 escapes.) */
export function parseX264Options(bytes: Uint8Array): Record<string, string> | null {
  const text = new TextDecoder("latin1").decode(bytes);
  const m = /x264 - core \d+[^\0]*?options: ([ -~]*)/.exec(text);
  if (!m) return null;
  const out: Record<string, string> = {};
  for (const kv of m[1].split(" ")) {
    const i = kv.indexOf("=");
    if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

/** What a full decode of this file may skip: "bidir" where it is exact (x264, ref=1), else "noref". */
export async function fullDecodeSkip(
  bins: MediaBins,
  file: string,
  codec: string | null,
  x264?: Record<string, string> | null,
): Promise<DecodeSkip> {
  if (codec !== "h264") return "noref";
  const o = x264 !== undefined ? x264 : await readX264Options(bins, file);
  return o?.ref === "1" ? "bidir" : "noref";
}

/**
 * Whether x264 wrote closed GOPs only (its default, open_gop=0): then every keyframe is an IDR,
 * which containers flag in their packets, so the packet flags list every keyframe.
 */
export const x264ClosedGops = (o: Record<string, string> | null): boolean => o !== null && o.open_gop === "0";
