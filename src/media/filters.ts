/** ffmpeg filter pieces shared by frame sampling and thumbnails. */

/**
 * PQ/HLG → SDR BT.709: linearize, convert primaries, Hable tone curve, back to BT.709 gamma
 * (zimg is in the 2018 build). Runs after resize and crop, so it costs little at 224 × 224. Without it
 * HDR10 frames come out grey and washed out.
 */
export const HDR_TO_SDR =
  "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv";

/**
 * Scale to `width` (height from the display aspect, so anamorphic and rotated video keep their
 * shape), tone-map HDR, square pixels. Shared with frame sampling, which writes thumbnails of the
 * frames it decodes anyway (frames.ts `jpegs`).
 */
export function thumbnailFilters(asked: number, hdr: boolean): string[] {
  if (!Number.isInteger(asked) || asked < 16 || asked > 7680)
    throw new RangeError("width must be an integer in 16..7680");
  // zimg (the HDR chain) refuses odd sizes in 4:2:0, so HDR thumbnails round the width down to even.
  const width = hdr ? asked - (asked % 2) : asked;
  return [
    `scale=w=${width}:h='max(2,trunc(${width}/dar/2)*2)':flags=bicubic`,
    ...(hdr ? [HDR_TO_SDR] : []),
    "setsar=1",
  ];
}

/** JPEG quality 1–100 (higher is better) as ffmpeg mjpeg arguments (q 31..2). */
export function jpegCodecArgs(quality = 85): string[] {
  const qual = Math.min(100, Math.max(1, quality));
  return ["-c:v", "mjpeg", "-q:v", String(Math.round(31 - ((qual - 1) * 29) / 99))];
}
