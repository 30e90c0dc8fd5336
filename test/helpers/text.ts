/**
 * Frames and clips with text drawn on them by ffmpeg `drawtext`, for the OCR tests: Latin with the
 * DejaVu and Liberation fonts, CJK with WenQuanYi Micro Hei (Debian's fonts-wqy-microhei, which
 * .ci/run installs; tests that need it skip with `CJK_FONT_MISSING` as the reason when it is not
 * there).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { GrayFrame } from "../../src/ocr/engine.ts";
import { ffmpeg } from "./ffmpeg.ts";

const FONTS = "/usr/share/fonts/truetype";
export const LATIN_FONT = `${FONTS}/dejavu/DejaVuSans.ttf`;
export const SERIF_FONT = `${FONTS}/dejavu/DejaVuSerif.ttf`;
export const CJK_FONT = `${FONTS}/wqy/wqy-microhei.ttc`;
/** Why the CJK tests did not run, or null when they can. */
export const CJK_FONT_MISSING = existsSync(CJK_FONT)
  ? null
  : `needs the CJK font ${CJK_FONT} (Debian package fonts-wqy-microhei)`;

/** A flat colour, 1280×720. */
export const flat = (colour: string) => `color=c=${colour}:size=1280x720:rate=10`;
/**
 * Footage stand-in: a moving test pattern blurred into soft colour fields, with grain, 1280×720 at
 * 10 fps (blurred small and scaled up: a 1280×720 blur of every frame is slow on a busy box).
 * `start`: where in the pattern's motion it begins.
 */
export const footage = (start = 2) =>
  `testsrc2=size=320x180:rate=10,trim=start=${start},setpts=PTS-STARTPTS,gblur=sigma=6,scale=1280:720:flags=bicubic,noise=alls=14:allf=t`;

export interface Drawn {
  text: string;
  font?: string;
  size: number;
  /** drawtext's colour, box and border options, e.g. "fontcolor=white:borderw=2:bordercolor=black". */
  style: string;
  /** Position (drawtext expressions); default x = 64, vertically centred. */
  x?: string | number;
  y?: string | number;
}

const drawtext = (d: Drawn) =>
  `drawtext=fontfile=${d.font ?? LATIN_FONT}:text='${d.text.replace(/'/g, "")}':fontsize=${d.size}:${d.style}:x=${d.x ?? 64}:y=${d.y ?? "(h-th)/2"}`;

/** One 1280×720 gray frame of `background` (a lavfi source) at `atSecs`, with `d` drawn on it. */
export async function drawnFrame(
  dir: string,
  name: string,
  background: string,
  d: Drawn | null,
  atSecs = 0,
): Promise<GrayFrame> {
  const out = join(dir, `${name}.gray`);
  await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      background,
      "-vf",
      `trim=start=${atSecs},${d ? `${drawtext(d)},` : ""}format=gray`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
    ],
    out,
  );
  return { width: 1280, height: 720, pixels: new Uint8Array(readFileSync(out)) };
}

/**
 * An H.264 clip of `secs` at 1280×720, 10 fps, of `background` with captions drawn over it:
 * each `{from, to, ...Drawn}` shown from `from` to `to` seconds.
 */
export async function captionedClip(
  dir: string,
  name: string,
  background: string,
  secs: number,
  captions: (Drawn & { from: number; to: number })[],
  extra: string[] = [],
): Promise<string> {
  const draws = captions.map((c) => `${drawtext(c)}:enable='between(t,${c.from},${c.to})'`);
  return ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      `${background}`,
      "-vf",
      [...draws, "format=yuv420p"].join(","),
      "-t",
      String(secs),
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      ...extra,
      "-pix_fmt",
      "yuv420p",
    ],
    join(dir, name),
    180_000,
  );
}
