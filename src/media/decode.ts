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
 * - "bidir": every B picture, reference B-pictures included. Faster again (x264 default settings,
 *   60 s 1080p: 3.9 vs 6.1 CPU-s) but NOT exact: with x264's defaults (b-pyramid normal) 16 of
 *   the 18 pictures it keeps differ from a plain decode (the P pictures it keeps are predicted from B-refs it dropped),
 *   with x265 9 of 11. Kept only so benchmarks and tests can show that; the pipeline uses "noref".
 * - `-skip_loop_filter all` is never used for a full decode: P pictures predicted from unfiltered
 *   references drift over a long GOP (on the 250-frame clip every compared frame differed).
 */
export type DecodeSkip = "none" | "noref" | "bidir";

/** ffmpeg input options (before `-i`) for a decode that may skip pictures as `skip` allows. */
export function decodeSkipArgs(skip: DecodeSkip | undefined): string[] {
  if (!skip || skip === "none") return [];
  return ["-skip_frame", skip, "-skip_loop_filter", skip];
}
