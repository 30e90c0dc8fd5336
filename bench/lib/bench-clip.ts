import { existsSync } from "node:fs";
import { join } from "node:path";
import type { BenchApp } from "../../src/app.ts";
import type { ActiveModel } from "../../src/models/roles.ts";

const ROOT = join(import.meta.dirname, "..", "..");
// ../shared from the main checkout; ../../shared from a worktree under /work/wt.
const SHARED =
  [join(ROOT, "..", "shared"), join(ROOT, "..", "..", "shared")].find(existsSync) ?? join(ROOT, "..", "shared");
const CLIPS = join(SHARED, "media", "video", "clips");
const REAL = [
  "mdnla_frog.mp4",
  "exo_big_buck_bunny_10s.mp4",
  "exo_london_skyline_360p.mp4",
  "mdn_flower.webm",
  "mdnla_rabbit.mp4",
  "exo_seagull_sample.avi",
  "mdnla_pig.mp4",
  "mdn_stream-of-water.mp4",
];

/**
 * The ingest benchmarks' clip: `secs` of 1080p30 H.264 made of real footage (the shared clips,
 * upscaled and cut together, so there are real shot changes and real motion) with real speech
 * looped under it. Synthetic test patterns are too static: near-duplicate dropping would hide most
 * of the model work. `gop`: keyframe interval in frames (60 = 2 s, typical of cameras and web
 * video); null leaves x264's default (250 frames, scene-cut keyframes), what most encoders and
 * editors write.
 */
export async function makeBenchClip(
  ffmpeg: string,
  out: string,
  opts: {
    secs: number;
    gop: number | null /** Filters applied to the picture last (e.g. a burned-in caption). */;
    vf?: string;
  },
): Promise<string> {
  const speech = join(SHARED, "fixtures", "testdata", "speech30s.wav");
  const clips = REAL.map((f) => join(CLIPS, f)).filter(existsSync);
  const args = ["-hide_banner", "-loglevel", "error", "-y"];
  let filter = "";
  if (clips.length) {
    clips.forEach((c) => args.push("-i", c));
    filter = clips
      .map(
        (_, i) =>
          `[${i}:v]scale=1920:1080:force_original_aspect_ratio=increase,crop=1920:1080,fps=30,setsar=1,format=yuv420p[v${i}]`,
      )
      .join(";");
    filter += `;${clips.map((_, i) => `[v${i}]`).join("")}concat=n=${clips.length}:v=1:a=0,loop=loop=-1:size=32767,trim=duration=${opts.secs}${opts.vf ? `,${opts.vf}` : ""}[v]`;
  } else {
    args.push("-f", "lavfi", "-i", `testsrc2=size=1920x1080:rate=30:duration=${opts.secs}`);
    filter = `[0:v]${opts.vf ?? "null"}[v]`;
  }
  args.push(
    "-stream_loop",
    "-1",
    "-i",
    speech,
    "-filter_complex",
    filter,
    "-map",
    "[v]",
    "-map",
    `${clips.length || 1}:a`,
    "-t",
    String(opts.secs),
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    ...(opts.gop ? ["-g", String(opts.gop)] : []),
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    out,
  );
  const p = Bun.spawn([ffmpeg, ...args], { stdout: "ignore", stderr: "pipe" });
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  if (code !== 0) throw new Error(`ffmpeg failed: ${err}`);
  return out;
}

/**
 * Images/s of the CLIP image encoder alone: `n` random 224² frames (rounded up to whole batches)
 * made up front, two batches in flight, as the ingest pipeline keeps them. `warm`: embed one batch
 * first, untimed (a pool whose model is not loaded yet).
 */
export async function encoderImagesPerSec(
  app: BenchApp,
  clip: ActiveModel,
  batch: number,
  n: number,
  warm = false,
): Promise<number> {
  const pool = await app.internals.inference.get();
  let seed = 7;
  const frame = () => ({
    rgb: new Uint8Array(224 * 224 * 3).map(() => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24),
    width: 224,
    height: 224,
  });
  const model = { modelDir: clip.dir, dtype: clip.dtype, batchSize: batch };
  if (warm) await pool.embedImages(model, Array.from({ length: batch }, frame));
  const batches = Array.from({ length: Math.ceil(n / batch) }, () => Array.from({ length: batch }, frame));
  const t0 = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < batches.length) await pool.embedImages(model, batches[next++]);
  };
  await Promise.all([lane(), lane()]);
  return ((batches.length * batch) / (performance.now() - t0)) * 1000;
}

if (import.meta.main) {
  // bun bench/lib/bench-clip.ts OUT SECS GOP|default — make one clip (to reuse across bench runs)
  const [out, secs, gop] = process.argv.slice(2);
  const { resolveToolFiles } = await import("../../src/runtime/native-files.ts");
  const ffmpeg = resolveToolFiles().ffmpeg;
  await makeBenchClip(ffmpeg, out, { secs: Number(secs ?? 60), gop: gop && gop !== "default" ? Number(gop) : null });
  console.log(out);
}
