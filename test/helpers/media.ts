/**
 * Test media, generated with the real ffmpeg on first use and cached for the rest of the test run.
 *
 * Cache: one directory per `vitest run`, keyed by the parent pid (all forked test workers of one
 * run share it), so two test files asking for the same clip generate it once: the first takes a
 * lock file (`open wx`), the others wait for the finished file, which appears by rename. Dirs of
 * runs whose process is gone are removed on the next run.
 *
 * This is the only place outside src/runtime that names the installer packages: src/media takes
 * binary paths as parameters.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MediaBins } from "../../src/media/process.ts";
import { isProcessAlive as alive } from "../../src/core/process.ts";

const require = createRequire(import.meta.url);

export function mediaBins(): MediaBins {
  return {
    ffmpeg: (require("@ffmpeg-installer/ffmpeg") as { path: string }).path,
    ffprobe: (require("@ffprobe-installer/ffprobe") as { path: string }).path,
  };
}

/** Ground truth of the `cuts` clip: 320×240, 25 fps, 8 s, five visibly different segments + a 440 Hz tone. */
export const CUTS = {
  fps: 25,
  durationSecs: 8,
  width: 320,
  height: 240,
  /** Exact, frame-aligned cut times (segment lengths are whole frames at 25 fps). */
  boundaries: [2.0, 3.6, 5.6, 6.8],
  audioHz: 440,
} as const;

/** `colors`: 8 solid colours, 24 frames each at 24000/1001 fps, keyframes every 60 frames (2.5025 s). */
export const COLORS = {
  fps: 24000 / 1001,
  framesPerSegment: 24,
  palette: ["red", "lime", "blue", "yellow", "magenta", "cyan", "white", "black"] as const,
  rgb: [
    [255, 0, 0],
    [0, 255, 0],
    [0, 0, 255],
    [255, 255, 0],
    [255, 0, 255],
    [0, 255, 255],
    [255, 255, 255],
    [0, 0, 0],
  ] as const,
  gop: 60,
  /** Index into `palette` of the segment shown at time t. */
  segmentAt(t: number): number {
    return Math.floor(Math.round(t * this.fps) / this.framesPerSegment);
  },
  get durationSecs(): number {
    return (this.palette.length * this.framesPerSegment) / this.fps;
  },
};

/**
 * `longCuts`: 20 s at 25 fps, 320×240, keyframes every 2 s (so ingest decodes keyframes only),
 * five different segments with hard cuts on keyframes, and a tone.
 */
export const LONG_CUTS = { durationSecs: 20, boundaries: [4, 8, 12, 16], gopSecs: 2, width: 320, height: 240 } as const;

/** `static`: 9 s of one grey, then a hard cut to 3 s of green; 64×64 at 5 fps. */
export const STATIC = { cutSecs: 9, durationSecs: 12 } as const;

const lavfi = (spec: string) => ["-f", "lavfi", "-i", spec];
const x264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"];

/** A generator writes `out`; `get` fetches a fixture it derives from (by name). */
type Gen = (out: string, get: (name: string) => Promise<string>) => Promise<void>;

/** name → [file name (the extension is what the file *claims* to be), generator]. */
const FIXTURES = {
  cuts: [
    "cuts.mp4",
    async (out) => {
      const seg = (src: string, d: number, extra = "") =>
        lavfi(`${src}${src.includes("=") ? ":" : "="}s=320x240:r=25:d=${d}${extra}`);
      await ffmpeg([
        ...seg("testsrc2", 2),
        ...seg("color=c=red", 1.6),
        ...seg("smptebars", 2),
        ...seg("color=c=blue", 1.2),
        ...seg("testsrc2", 1.2, ",negate"),
        ...lavfi("sine=f=440:d=8:sample_rate=44100"),
        "-filter_complex",
        "[0:v][1:v][2:v][3:v][4:v]concat=n=5:v=1:a=0,format=yuv420p[v]",
        "-map",
        "[v]",
        "-map",
        "5:a",
        ...x264,
        "-g",
        "50",
        "-c:a",
        "aac",
        "-b:a",
        "64k",
        "-ac",
        "1",
        out,
      ]);
    },
  ],
  longCuts: [
    "long-cuts.mp4",
    async (out) => {
      const seg = (src: string, extra = "") =>
        lavfi(`${src}${src.includes("=") ? ":" : "="}s=320x240:r=25:d=4${extra}`);
      await ffmpeg([
        ...seg("testsrc2"),
        ...seg("color=c=red"),
        ...seg("smptebars"),
        ...seg("color=c=blue"),
        ...seg("testsrc2", ",negate"),
        ...lavfi("sine=f=440:d=20:sample_rate=16000"),
        "-filter_complex",
        "[0:v][1:v][2:v][3:v][4:v]concat=n=5:v=1:a=0,format=yuv420p[v]",
        "-map",
        "[v]",
        "-map",
        "5:a",
        ...x264,
        "-g",
        "50",
        "-keyint_min",
        "50",
        "-sc_threshold",
        "0",
        "-c:a",
        "aac",
        "-b:a",
        "32k",
        "-ac",
        "1",
        out,
      ]);
    },
  ],
  cutsFaststart: [
    "cuts-faststart.mp4",
    async (out, get) => ffmpeg(["-i", await get("cuts"), "-c", "copy", "-movflags", "+faststart", out]),
  ],
  cutsTs: ["cuts.ts", async (out, get) => ffmpeg(["-i", await get("cuts"), "-c", "copy", "-f", "mpegts", out])],
  /** moov atom at the end, cut off: ffprobe cannot open it. */
  truncated: ["truncated.mp4", async (out, get) => cutFile(await get("cuts"), out, 0.5)],
  /** moov first, samples cut at 55%: opens fine, decoding stops early. */
  truncatedFaststart: ["truncated-faststart.mp4", async (out, get) => cutFile(await get("cutsFaststart"), out, 0.55)],
  /** cuts.ts with 10% of its bytes overwritten by noise in the middle. */
  corruptTs: [
    "corrupt.ts",
    async (out, get) => {
      const b = new Uint8Array(await readFile(await get("cutsTs")));
      let seed = 12345;
      for (let i = Math.floor(b.length * 0.4); i < Math.floor(b.length * 0.5); i++) {
        seed = (seed * 1103515245 + 12345) >>> 0;
        b[i] = seed >>> 24;
      }
      await writeFile(out, b);
    },
  ],
  colors: [
    "colors.mp4",
    async (out) => {
      const inputs = COLORS.palette.flatMap((c) =>
        lavfi(`color=c=${c}:s=160x120:r=24000/1001:d=${(COLORS.framesPerSegment * 1001) / 24000}`),
      );
      const n = COLORS.palette.length;
      const chain =
        Array.from({ length: n }, (_, i) => `[${i}:v]`).join("") + `concat=n=${n}:v=1:a=0,format=yuv420p[v]`;
      await ffmpeg([
        ...inputs,
        "-filter_complex",
        chain,
        "-map",
        "[v]",
        ...x264,
        "-g",
        String(COLORS.gop),
        "-keyint_min",
        String(COLORS.gop),
        "-sc_threshold",
        "0",
        "-bf",
        "0",
        out,
      ]);
    },
  ],
  static: [
    "static.mp4",
    async (out) => {
      await ffmpeg([
        ...lavfi("color=c=gray:s=64x64:r=5:d=9"),
        ...lavfi("color=c=green:s=64x64:r=5:d=3"),
        "-filter_complex",
        "[0:v][1:v]concat=n=2:v=1:a=0,format=yuv420p[v]",
        "-map",
        "[v]",
        ...x264,
        out,
      ]);
    },
  ],
  short: ["short.mp4", async (out) => ffmpeg([...lavfi("testsrc2=s=320x240:r=25:d=0.5"), ...x264, out])],
  // testsrc (RGB) keeps odd sizes; testsrc2 (4:2:0) rounds them to even. VP9 codes odd 4:2:0 sizes.
  odd: [
    "odd.webm",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc=s=333x197:r=25:d=1"),
        "-c:v",
        "libvpx-vp9",
        "-pix_fmt",
        "yuv420p",
        "-deadline",
        "realtime",
        "-cpu-used",
        "8",
        "-b:v",
        "200k",
        out,
      ]),
  ],
  // Drawn at 960×540 and blown up: rendering testsrc2 at 4K costs 4× more than encoding it.
  uhd: [
    "uhd.mp4",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc2=s=960x540:r=25:d=1"),
        "-vf",
        "scale=3840:2160:flags=neighbor",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        out,
      ]),
  ],
  hdr: [
    "hdr.mp4",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc2=s=640x360:r=25:d=1"),
        "-c:v",
        "libx265",
        "-preset",
        "ultrafast",
        "-x265-params",
        "log-level=error",
        "-pix_fmt",
        "yuv420p10le",
        "-color_trc",
        "smpte2084",
        "-color_primaries",
        "bt2020",
        "-colorspace",
        "bt2020nc",
        "-tag:v",
        "hvc1",
        out,
      ]),
  ],
  /** 320×160, red top half and blue bottom half, tagged to be shown rotated by 90°. */
  // ffmpeg 4.1 drops the rotate tag when it encodes, so tag in a second, copying pass.
  rotated: [
    "rotated.mp4",
    async (out) => {
      const plain = `${out}.plain.mp4`;
      await ffmpeg([
        ...lavfi("color=c=red:s=320x80:d=1"),
        ...lavfi("color=c=blue:s=320x80:d=1"),
        "-filter_complex",
        "[0:v][1:v]vstack,format=yuv420p[v]",
        "-map",
        "[v]",
        ...x264,
        plain,
      ]);
      await ffmpeg(["-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90", out]);
      await rm(plain, { force: true });
    },
  ],
  /** 160×240 stored, 2:1 pixels: displayed 320×240. */
  anamorphic: [
    "anamorphic.mp4",
    async (out) => ffmpeg([...lavfi("testsrc2=s=160x240:r=25:d=0.5"), "-vf", "setsar=2/1", ...x264, out]),
  ],
  mov: ["tiny.mov", async (out) => ffmpeg([...lavfi("testsrc2=s=176x144:r=25:d=0.5"), ...x264, "-f", "mov", out])],
  avi: [
    "tiny.avi",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc2=s=176x144:r=25:d=0.5"),
        ...lavfi("sine=d=0.5"),
        "-c:v",
        "mpeg4",
        "-c:a",
        "libmp3lame",
        "-shortest",
        out,
      ]),
  ],
  mkv: [
    "tiny.mkv",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc2=s=176x144:r=25:d=0.5"),
        ...lavfi("sine=d=0.5"),
        ...x264,
        "-c:a",
        "aac",
        "-shortest",
        out,
      ]),
  ],
  webm: [
    "tiny.webm",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc2=s=176x144:r=25:d=0.5"),
        ...lavfi("sine=d=0.5"),
        "-c:v",
        "libvpx",
        "-deadline",
        "realtime",
        "-c:a",
        "libvorbis",
        "-shortest",
        out,
      ]),
  ],
  mpg: [
    "tiny.mpg",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc2=s=176x144:r=25:d=0.5"),
        ...lavfi("sine=d=0.5"),
        "-c:v",
        "mpeg1video",
        "-c:a",
        "mp2",
        "-shortest",
        "-f",
        "mpeg",
        out,
      ]),
  ],
  threeGp: [
    "tiny.3gp",
    async (out) =>
      ffmpeg([
        ...lavfi("testsrc2=s=176x144:r=25:d=0.5"),
        ...lavfi("sine=d=0.5:sample_rate=8000"),
        "-c:v",
        "h263",
        "-c:a",
        "aac",
        "-ar",
        "8000",
        "-ac",
        "1",
        "-shortest",
        "-f",
        "3gp",
        out,
      ]),
  ],
  /** 3 s of red; the 440 Hz tone's timestamps start at 1 s (audio begins after the video). */
  lateAudio: [
    "late-audio.mkv",
    async (out) =>
      ffmpeg([
        ...lavfi("color=c=red:s=64x64:r=25:d=3"),
        "-itsoffset",
        "1",
        ...lavfi("sine=f=440:d=2"),
        "-map",
        "0:v",
        "-map",
        "1:a",
        ...x264,
        "-c:a",
        "aac",
        out,
      ]),
  ],
  audioM4a: ["tone.m4a", async (out) => ffmpeg([...lavfi("sine=f=440:d=3"), "-c:a", "aac", out])],
  audioMp3: ["tone.mp3", async (out) => ffmpeg([...lavfi("sine=f=440:d=3"), "-c:a", "libmp3lame", out])],
  empty: ["empty.mp4", async (out) => writeFile(out, new Uint8Array(0))],
  pngAsMp4: [
    "picture.mp4",
    async (out) => ffmpeg([...lavfi("testsrc2=s=64x64"), "-frames:v", "1", "-f", "image2", "-c:v", "png", out]),
  ],
  textAsMp4: ["notes.mp4", async (out) => writeFile(out, "These are meeting notes, not a video.\n".repeat(40))],
  randomBytes: ["random.mp4", async (out) => writeFile(out, noise(64 * 1024, 7))],
  /** A real ftyp box (claims ISO MP4) followed by noise. */
  garbageMp4: [
    "garbage.mp4",
    async (out) => {
      const ftyp = new Uint8Array([0, 0, 0, 0x18, ...ascii("ftypisom"), 0, 0, 2, 0, ...ascii("isomiso2")]);
      await writeFile(out, new Uint8Array([...ftyp, ...noise(64 * 1024, 9)]));
    },
  ],
} satisfies Record<string, [string, Gen]>;

export type FixtureName = keyof typeof FIXTURES;

/** Path of one fixture, generating it (and what it derives from) if this run has not yet. */
export async function mediaFixture(name: FixtureName): Promise<string> {
  const [fileName, gen] = FIXTURES[name] as [string, Gen];
  const dir = await runDir();
  const path = join(dir, fileName);
  const lock = `${path}.lock`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (existsSync(path)) return path;
    let fh;
    try {
      fh = await open(lock, "wx");
    } catch {
      // Another worker is generating it; wait, and break a lock left by a killed worker.
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > 60_000) await rm(lock, { force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for fixture ${name}`);
      await Bun.sleep(50);
      continue;
    }
    try {
      const tmp = join(dir, `tmp-${process.pid}-${fileName}`);
      await gen(tmp, (n) => mediaFixture(n as FixtureName));
      await rename(tmp, path);
      return path;
    } finally {
      await fh.close();
      await unlink(lock).catch(() => {});
    }
  }
}

/** Several fixtures at once (generated one after another: the CPU is shared). */
export async function mediaFixtures<N extends FixtureName>(...names: N[]): Promise<Record<N, string>> {
  const out = {} as Record<N, string>;
  for (const n of names) out[n] = await mediaFixture(n);
  return out;
}

async function runDir(): Promise<string> {
  const base = tmpdir();
  const dir = join(base, `vsearch-media-fixtures-${process.ppid}`);
  if (!existsSync(dir)) {
    for (const old of readdirSync(base)) {
      const m = /^vsearch-media-fixtures-(\d+)$/.exec(old);
      if (m && Number(m[1]) !== process.ppid && !alive(Number(m[1])))
        rmSync(join(base, old), { recursive: true, force: true });
    }
    await mkdir(dir, { recursive: true });
  }
  return dir;
}

/** Runs the test ffmpeg (time-limited) and throws with its stderr on failure. */
export async function ffmpeg(args: string[], timeoutMs = 60_000): Promise<void> {
  const proc = Bun.spawn([mediaBins().ffmpeg, "-hide_banner", "-nostdin", "-v", "error", "-y", ...args], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`ffmpeg ${args.join(" ")} failed (${code}): ${stderr}`);
}

async function cutFile(src: string, out: string, fraction: number): Promise<void> {
  const b = await readFile(src);
  await writeFile(out, b.subarray(0, Math.floor(b.length * fraction)));
}

function noise(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1664525 + 1013904223) >>> 0;
    b[i] = s >>> 24;
  }
  return b;
}

const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

/** Decoded RGB of pixel (x, y) of a square frame. */
export function pixel(rgb: Uint8Array, size: number, x: number, y: number): [number, number, number] {
  const p = (y * size + x) * 3;
  return [rgb[p], rgb[p + 1], rgb[p + 2]];
}

/** Mean RGB of a frame. */
export function meanRgb(rgb: Uint8Array): [number, number, number] {
  const s = [0, 0, 0];
  for (let i = 0; i < rgb.length; i += 3) {
    s[0] += rgb[i];
    s[1] += rgb[i + 1];
    s[2] += rgb[i + 2];
  }
  const n = rgb.length / 3;
  return [s[0] / n, s[1] / n, s[2] / n];
}

/** Index of the palette colour nearest to `c`. */
export function nearestColour(c: readonly number[], palette: readonly (readonly number[])[]): number {
  let best = 0;
  let bestD = Infinity;
  palette.forEach((p, i) => {
    const d = (p[0] - c[0]) ** 2 + (p[1] - c[1]) ** 2 + (p[2] - c[2]) ** 2;
    if (d < bestD) {
      best = i;
      bestD = d;
    }
  });
  return best;
}

/** The real clips in the shared media folder (absent on CI). */
export const SHARED_CLIPS = "/work/shared/media/video/clips";

/** A whole JPEG: starts with SOI, ends with EOI. */
export function isJpeg(b: Uint8Array): boolean {
  return b.length > 4 && b[0] === 0xff && b[1] === 0xd8 && b[b.length - 2] === 0xff && b[b.length - 1] === 0xd9;
}

/** Width and height of an image (or a video's first stream), as ffprobe reads them. */
export async function imageDimensions(path: string): Promise<[number, number]> {
  const p = Bun.spawn(
    [mediaBins().ffprobe, "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", path],
    { stdout: "pipe" },
  );
  const [w, h] = (await new Response(p.stdout).text()).trim().split(",").map(Number);
  return [w, h];
}

/**
 * An ffmpeg wrapper script in `dir` that logs every call's arguments (one per line, then a blank
 * line) before running the real ffmpeg: point VSEARCH_FFMPEG_PATH at `path`, read `calls()`.
 */
export function loggedFfmpeg(dir: string): { path: string; calls(): string[][] } {
  // One file per call, named by the time it started: two ffmpeg processes started at once wrote
  // their arguments line by line into one log, interleaved (split-decode.test.ts saw one call of
  // both, or the halves' arguments swapped).
  const logDir = join(dir, "ffmpeg-calls");
  mkdirSync(logDir, { recursive: true });
  const path = join(dir, "ffmpeg-logged");
  writeFileSync(
    path,
    `#!/bin/sh\nf='${logDir}'/$(date +%s%N)-$$\nfor a in "$@"; do printf '%s\\n' "$a" >> "$f.part"; done\nmv "$f.part" "$f"\nexec '${mediaBins().ffmpeg}' "$@"\n`,
  );
  chmodSync(path, 0o755);
  return {
    path,
    calls: () =>
      readdirSync(logDir)
        .filter((n) => !n.endsWith(".part"))
        .sort()
        .map((n) => readFileSync(join(logDir, n), "utf8").split("\n").filter(Boolean)),
  };
}

/** The filter graph of a logged ffmpeg call ("" if none). */
export const filterGraphOf = (args: string[]) =>
  args[args.findIndex((a) => a === "-filter_complex" || a === "-vf") + 1] ?? "";
