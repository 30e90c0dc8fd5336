/**
 * The filtergraphs of frame sampling (frames.ts): the model input, and the branches that the same
 * decode feeds — thumbnails, the poster, and gray frames for reading on-screen text. Split out of
 * frames.ts, which runs them.
 */
import { HDR_TO_SDR, thumbnailFilters } from "./filters.ts";
import { MIN_SHOT_SECS, SCENE_THRESHOLD } from "./shots.ts";

/**
 * select → resize (shortest display side to `size`) → center crop → [tone-map] → showinfo.
 * Selecting first means only the kept frames are scaled; showinfo last means it sees exactly the
 * frames written to stdout, in order.
 */
export function filterGraph(selectExpr: string, size: number, hdr: boolean): string {
  return [`select='${selectExpr}'`, ...modelInputFilters(size, hdr), "showinfo"].join(",");
}

/**
 * The same selection, split into the model input (`[rgb]`) and a thumbnail of every selected frame
 * (`[jpg]`): one decode feeds both. showinfo sits at the end of the model branch, as in
 * filterGraph: it describes exactly the frames written to stdout, in order (scale and crop never
 * drop or re-time one), and its per-frame checksums cost 224² pixels there instead of the source
 * size (at 1080p ~2.5 ms a frame: 0.1 CPU-s of a 0.65 CPU-s keyframe decode of 60 s).
 * With `text`, a third branch (`[txt]`) gives every selected frame in gray at `text`'s size
 * (area averaging, which keeps thin strokes; tone-mapped like the others) for the OCR stage.
 */
export function filterGraphWithJpegs(
  selectExpr: string,
  size: number,
  hdr: boolean,
  jpegWidth: number,
  poster?: { atSecs: number; width: number },
  input = "[0:v:0]",
  text?: { width: number; height: number },
): string {
  const outs = ["[model]", "[thumb]", ...(poster ? ["[post]"] : []), ...(text ? ["[text]"] : [])];
  return (
    `${input}select='${selectExpr}',split=${outs.length}${outs.join("")};` +
    `[model]${modelInputFilters(size, hdr).join(",")},showinfo[rgb];` +
    `[thumb]${thumbnailFilters(jpegWidth, hdr).join(",")}[jpg]` +
    // One frame only: the first one at or after the poster time (select keeps its own state).
    (poster
      ? `;[post]select='isnan(prev_selected_t)*gte(t,${Math.max(0, poster.atSecs).toFixed(6)})',${thumbnailFilters(poster.width, hdr).join(",")}[poster]`
      : "") +
    (text ? `;[text]${textFrameFilters(text.width, text.height, hdr).join(",")}[txt]` : "")
  );
}

/** Gray frames for OCR: scaled with area averaging (bicubic rings round thin strokes), [tone-mapped], square pixels. */
export function textFrameFilters(width: number, height: number, hdr: boolean): string[] {
  return [`scale=${width}:${height}:flags=area`, ...(hdr ? [HDR_TO_SDR] : []), "format=gray", "setsar=1"];
}

/** Defaults and checks as detectShotBoundaries'. */
export function cutOptions(o: { threshold?: number; analysisWidth?: number; minShotSecs?: number }) {
  const threshold = o.threshold ?? SCENE_THRESHOLD;
  const width = o.analysisWidth ?? 160;
  if (!(threshold > 0 && threshold < 1)) throw new RangeError("cuts.threshold must be in (0, 1)");
  if (!Number.isInteger(width) || width < 16) throw new RangeError("cuts.analysisWidth must be an integer ≥ 16");
  return { threshold, width, minShotSecs: o.minShotSecs ?? MIN_SHOT_SECS };
}

/** Shortest display side to `size` (bicubic, as CLIP's preprocessing), centre crop, [tone-map]. */
export function modelInputFilters(size: number, hdr: boolean): string[] {
  const s = size;
  return [
    `scale=w='max(${s},ceil(${s}*dar))':h='max(${s},ceil(${s}/dar))':flags=bicubic+accurate_rnd+full_chroma_int`,
    `crop=${s}:${s}`,
    // After the crop: zimg refuses odd sizes in 4:2:0, and the resize may give an odd width.
    ...(hdr ? [HDR_TO_SDR] : []),
    "setsar=1",
  ];
}
