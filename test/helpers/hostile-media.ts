import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { constants, crc32, deflateRawSync } from "node:zlib";
import { ffmpeg } from "./ffmpeg.ts";

/**
 * The hostile media of issue 21, made in a test's setup in well under a second each (no decoded
 * frame is ever held: the 12000×12000 PNG is written from one compressed block repeated).
 */

const MOD = 65521;

/** adler32 (zlib's trailer) of `b`, as its two halves. */
function adler(b: Uint8Array): [number, number] {
  let a = 1;
  let s = 0;
  for (const c of b) {
    a = (a + c) % MOD;
    s = (s + a) % MOD;
  }
  return [a, s];
}

const chunk = (type: string, data: Buffer) => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
};

/**
 * A valid RGB PNG of `width`×`height` in one flat colour, a few hundred kB for 12000×12000 (144
 * megapixels, 432 MB decoded): 40 rows are deflated once with a full flush, so the compressed
 * block stands alone and is repeated; the zlib trailer is combined from the block's adler32.
 * `height` must be a multiple of 40.
 */
export function flatPng(path: string, width: number, height: number, rgb: [number, number, number] = [200, 30, 30]) {
  const ROWS = 40;
  if (height % ROWS) throw new Error(`height ${height} is not a multiple of ${ROWS}`);
  const row = Buffer.alloc(1 + width * 3); // filter byte 0, then pixels
  for (let x = 0; x < width; x++) row.set(rgb, 1 + x * 3);
  const block = Buffer.concat(Array.from({ length: ROWS }, () => row));
  const z = deflateRawSync(block, { finishFlush: constants.Z_FULL_FLUSH, level: 9 });
  const [a1, b1] = adler(block);
  const len = block.length % MOD;
  let [a, b] = [1, 0];
  for (let i = 0; i < height / ROWS; i++) {
    // adler32 of (data so far) + block, from both halves (zlib's adler32_combine).
    const na = (a + a1 - 1 + MOD) % MOD;
    const nb = (b + b1 + len * ((a - 1 + MOD) % MOD)) % MOD;
    [a, b] = [na, nb];
  }
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32BE(((b << 16) | a) >>> 0);
  const idat = Buffer.concat([
    Buffer.from([0x78, 0x01]),
    ...Array<Buffer>(height / ROWS).fill(z),
    Buffer.from([0x03, 0x00]), // an empty final block
    trailer,
  ]);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  writeFileSync(
    path,
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk("IHDR", ihdr),
      chunk("IDAT", idat),
      chunk("IEND", Buffer.alloc(0)),
    ]),
  );
  return path;
}

/**
 * PNG frames in a MOV (stream copy: nothing decoded while muxing), `sizes` one per frame at 2 fps.
 * The container declares `declared` (default: the first frame's size) — a lie when frames differ.
 */
export async function pngMov(
  dir: string,
  name: string,
  sizes: [number, number][],
  declared: [number, number] = sizes[0],
): Promise<string> {
  sizes.forEach(([w, h], i) => flatPng(join(dir, `${name}-${i + 1}.png`), w, h, i % 2 ? [30, 30, 200] : [200, 30, 30]));
  return ffmpeg(
    [
      "-f",
      "image2",
      "-framerate",
      "2",
      "-video_size",
      `${declared[0]}x${declared[1]}`,
      "-pixel_format",
      "rgb24",
      "-i",
      join(dir, `${name}-%d.png`),
      "-c:v",
      "copy",
    ],
    join(dir, `${name}.mov`),
  );
}

/** The timestamp-gap MKV: 49 H.264 frames, 48 at 25 fps and the last at t = 100 000 s. */
export const timestampGapMkv = (dir: string) =>
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=320x240:rate=25",
      "-frames:v",
      "49",
      "-vf",
      "setpts='if(eq(N,48),100000/TB,PTS)'",
      "-vsync",
      "passthrough",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(dir, "gap.mkv"),
  );
