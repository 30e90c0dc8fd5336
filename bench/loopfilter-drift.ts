/**
 * What skipping the deblocking (loop) filter in a full, skipping decode does to the pictures the
 * consumers actually see (issue 14): the 224×224 CLIP input and the 320 px thumbnail of each 1 s
 * grid frame, decoded exactly as the frame decode does (the file's own `fullDecodeSkip`), against
 * the same decode with `-skip_loop_filter all` (no picture filtered) and `nokey` (keyframes
 * filtered). Without the filter, P pictures are predicted from unfiltered references, so the error
 * grows through a GOP; this measures how far, over whole GOPs, where it matters.
 *
 * Yardsticks for "small": the same exact decode's grid shifted by 0.1 s (the sampler already
 * accepts a grid frame up to 3 pictures late with `bidir`, docs/INGEST.md), and for thumbnails the
 * JPEG encode they get anyway (q 85, jpegCodecArgs). Also the decode's CPU-s per variant (this
 * script's graph, no cut analysis) and whether the cut analysis finds the same cuts.
 *
 * Run: node_modules/.bin/bun bench/loopfilter-drift.ts FILE…  → one table row per file and variant
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { resolveToolFiles } from "../src/runtime/native-files.ts";
import { fullDecodeSkip, type DecodeSkip } from "../src/media/decode.ts";
import { modelInputFilters } from "../src/media/frame-graph.ts";
import { thumbnailFilters } from "../src/media/filters.ts";
import { probeMedia } from "../src/media/probe.ts";
import { gridTerm } from "../src/media/select.ts";
import { detectShotBoundaries } from "../src/media/shots.ts";

const bins = resolveToolFiles();
const work = mkdtempSync(join(tmpdir(), "vsearch-lf-drift-"));
const THUMB = 320;

async function ffmpeg(args: string[]): Promise<number> {
  const p = Bun.spawn([bins.ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "error", ...args], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  if (code !== 0) throw new Error(`ffmpeg ${args.join(" ")}: ${err}`);
  const ru = p.resourceUsage();
  return ru ? Number(ru.cpuTime.user + ru.cpuTime.system) / 1e6 : NaN;
}

/** The grid frames at 224 (model input) and 320 px (thumbnail), raw RGB, plus the decode's CPU-s. */
async function decode(
  file: string,
  skip: DecodeSkip,
  loopFilter: string,
  shiftSecs: number,
  hdr: boolean,
  tag: string,
) {
  const sel = shiftSecs
    ? `select='gte(t,${shiftSecs})*(isnan(prev_selected_t)+gt(floor(t-${shiftSecs}),floor(prev_selected_t-${shiftSecs})))'`
    : `select='${gridTerm(1)}'`;
  const graph = `[0:v:0]${sel},split[a][b];[a]${modelInputFilters(224, hdr).join(",")}[m];[b]${thumbnailFilters(THUMB, hdr).join(",")}[t]`;
  const m = join(work, `${tag}.224.rgb`);
  const t = join(work, `${tag}.320.rgb`);
  const skipArgs = skip === "none" ? [] : ["-skip_frame", skip];
  const cpu = await ffmpeg([
    ...skipArgs,
    "-skip_loop_filter",
    loopFilter,
    "-threads",
    "1",
    "-i",
    file,
    "-filter_complex",
    graph,
    "-map",
    "[m]",
    "-vsync",
    "passthrough",
    "-f",
    "rawvideo",
    "-pix_fmt",
    "rgb24",
    "-y",
    m,
    "-map",
    "[t]",
    "-vsync",
    "passthrough",
    "-f",
    "rawvideo",
    "-pix_fmt",
    "rgb24",
    "-y",
    t,
  ]);
  return { m: readFileSync(m), t: readFileSync(t), cpu };
}

/** JPEG (q 85 as the thumbnails are written) and back: the error every thumbnail already carries. */
async function jpegRoundTrip(raw: Buffer, w: number, h: number): Promise<Buffer> {
  const inp = join(work, "j.rgb");
  await Bun.write(inp, raw);
  const jpgs = join(work, "j%05d.jpg");
  await ffmpeg([
    "-f",
    "rawvideo",
    "-pix_fmt",
    "rgb24",
    "-s",
    `${w}x${h}`,
    "-i",
    inp,
    "-c:v",
    "mjpeg",
    "-q:v",
    "6",
    "-y",
    jpgs,
  ]);
  const back = join(work, "jback.rgb");
  await ffmpeg(["-i", jpgs, "-f", "rawvideo", "-pix_fmt", "rgb24", "-y", back]);
  return readFileSync(back);
}

interface Err {
  psnr: number;
  worstPsnr: number;
  mae: number;
  worstMae: number;
  max: number;
}
/** Frame by frame over the shorter of the two: pooled PSNR, worst frame, mean/worst-frame mean/max abs error (levels of 255). */
function compare(a: Buffer, b: Buffer, frameBytes: number): Err {
  const n = Math.floor(Math.min(a.length, b.length) / frameBytes);
  let se = 0,
    ae = 0,
    max = 0,
    worstPsnr = Infinity,
    worstMae = 0;
  for (let f = 0; f < n; f++) {
    let fse = 0,
      fae = 0;
    for (let i = f * frameBytes; i < (f + 1) * frameBytes; i++) {
      const d = Math.abs(a[i] - b[i]);
      fse += d * d;
      fae += d;
      if (d > max) max = d;
    }
    se += fse;
    ae += fae;
    worstPsnr = Math.min(worstPsnr, psnr(fse / frameBytes));
    worstMae = Math.max(worstMae, fae / frameBytes);
  }
  return { psnr: psnr(se / (n * frameBytes)), worstPsnr, mae: ae / (n * frameBytes), worstMae, max };
}
const psnr = (mse: number) => (mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse));
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "∞");
const f2 = (x: number) => x.toFixed(2);
const row = (e: Err) => `${f1(e.psnr)} / ${f1(e.worstPsnr)} dB | ${f2(e.mae)} / ${f2(e.worstMae)} / ${e.max}`;

console.log(
  `start ${new Date().toISOString()} load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
console.log(
  "| file | skip | variant | 224 px: PSNR pooled / worst frame | 224 px: mean / worst-frame mean / max abs | 320 px: PSNR | 320 px: mean / worst-frame mean / max | decode CPU-s (1 thread) | cuts |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const file of process.argv.slice(2)) {
  const info = await probeMedia(bins, file);
  const skip = await fullDecodeSkip(bins, file, info.videoCodec);
  const hdr = info.hdr;
  const name = file.split("/").pop()!;
  const exact = await decode(file, skip, skip === "none" ? "default" : skip, 0, hdr, "exact");
  const th = exact.t.length / (exact.m.length / (224 * 224 * 3)) / 3 / THUMB; // thumbnail height
  const thumbBytes = THUMB * th * 3;
  const cutsOf = async (lf: "exact" | "skip") =>
    (await detectShotBoundaries(bins, file, { skipFrames: skip, loopFilter: lf })).map((c) => c.toFixed(2)).join(",");
  const exactCuts = await cutsOf("exact").catch(() => "?");
  console.log(
    `| ${name} | ${skip} | exact | — | — | — | — | ${f2(exact.cpu)} | ${exactCuts.split(",").filter(Boolean).length} |`,
  );
  for (const lf of ["all", "nokey"]) {
    const v = await decode(file, skip, lf, 0, hdr, lf);
    const cuts = lf === "all" ? await cutsOf("skip").catch(() => "?") : "";
    const same = lf === "all" ? (cuts === exactCuts ? "same" : `differ: ${cuts} vs ${exactCuts}`) : "";
    console.log(
      `| ${name} | ${skip} | skip_loop_filter ${lf} | ${row(compare(exact.m, v.m, 224 * 224 * 3))} | ${row(compare(exact.t, v.t, thumbBytes))} | ${f2(v.cpu)} | ${same} |`,
    );
  }
  const later = await decode(file, skip, skip === "none" ? "default" : skip, 0.1, hdr, "later");
  console.log(
    `| ${name} | ${skip} | yardstick: grid 0.1 s later | ${row(compare(exact.m, later.m, 224 * 224 * 3))} | ${row(compare(exact.t, later.t, thumbBytes))} | | |`,
  );
  const jpeg = await jpegRoundTrip(exact.t, THUMB, th);
  console.log(
    `| ${name} | ${skip} | yardstick: JPEG q85 of the thumbnail | | | ${row(compare(exact.t, jpeg, thumbBytes))} | | |`,
  );
}
console.log(
  `end ${new Date().toISOString()} load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
rmSync(work, { recursive: true, force: true });
