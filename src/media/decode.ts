/**
 * Decoder shortcuts for a full decode whose consumers need only *some* pictures (a 1 fps sample and
 * a scene score between neighbouring pictures), never every one.
 *
 * - "noref": `-skip_frame noref -skip_loop_filter noref` — pictures nothing is predicted from are
 *   not decoded at all. By definition no kept picture depends on a skipped one, so what is decoded
 *   is bit-identical to a plain decode (test/media/decode-skip.test.ts checks it per codec); the
 *   timestamps are the pictures' own. Honoured by H.264 (nal_ref_idc = 0: x264's non-reference
 *   B-frames, 2 of every 3 with its default b-pyramid), HEVC (the *_N NAL types), MPEG-4 part 2 and
 *   MPEG-1/2 (B-frames); VP8/VP9 frames that refresh no reference slot are also skipped. Codecs
 *   that do not implement it just decode everything.
 * - "bidir": every B picture, reference B-pictures included. Faster again (x264 default settings,
 *   60 s 1080p: 3.9 vs 6.1 CPU-s, BENCHMARKS.md), but only exact where no P picture refers to a
 *   B one: true of x264's default `b-pyramid normal` (the test checks it), not guaranteed by the
 *   standard (HEVC encoders use B pictures as references everywhere), so it is opt-in.
 * - `-skip_loop_filter all` is never used for a full decode: P pictures predicted from unfiltered
 *   references drift over a long GOP (on the 250-frame clip every compared frame differed).
 */
export type DecodeSkip = "none" | "noref" | "bidir";

export const DECODE_SKIPS: readonly DecodeSkip[] = ["none", "noref", "bidir"];

/** ffmpeg input options (before `-i`) for a decode that may skip pictures as `skip` allows. */
export function decodeSkipArgs(skip: DecodeSkip | undefined): string[] {
  if (!skip || skip === "none") return [];
  return ["-skip_frame", skip, "-skip_loop_filter", skip];
}
