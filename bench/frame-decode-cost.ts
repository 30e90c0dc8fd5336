/**
 * Where the CPU of the long-GOP frame decode goes (issue 14): the frame sampler (src/media/frames.ts)
 * run on its own, without the model, with its parts switched on one by one — decode only (a plain
 * `-f null` of the same skipping decode), + the 1 fps sampler's 224 px model input, + the cut
 * analysis at 160 px, + the 320 px JPEGs and the poster (the pipeline's graph) — each with and
 * without the loop filter. CPU-s are ffmpeg's own (reaped children of this process, /proc/self/stat).
 *
 * Run: node_modules/.bin/bun bench/frame-decode-cost.ts FILE [--threads N]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { resolveToolFiles } from "../src/runtime/native-files.ts";
import { decodeSkipArgs, fullDecodeSkip, type LoopFilter } from "../src/media/decode.ts";
import { sampleFrames, type SampleFramesOptions } from "../src/media/frames.ts";
import { probeMedia } from "../src/media/probe.ts";

const bins = resolveToolFiles();
const file = process.argv[2];
const ti = process.argv.indexOf("--threads");
const threads = ti > 0 ? Number(process.argv[ti + 1]) : undefined;
const work = mkdtempSync(join(tmpdir(), "vsearch-frame-cost-"));

/** CPU seconds of this process's reaped children (cutime + cstime). */
function childCpu(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[13]) + Number(f[14])) / 100;
}

async function timed(what: string, fn: () => Promise<number | void>) {
  const c0 = childCpu();
  const t0 = performance.now();
  const n = await fn();
  const cpu = childCpu() - c0;
  console.log(
    `| ${what} | ${cpu.toFixed(2)} | ${((performance.now() - t0) / 1000).toFixed(2)} | ${loadavg()[0].toFixed(1)} |${n ? ` ${n} frames` : ""}`,
  );
}

const info = await probeMedia(bins, file);
const skip = await fullDecodeSkip(bins, file, info.videoCodec);
console.log(
  `${file}: ${info.width}×${info.height}, skip ${skip}, threads ${threads ?? "ffmpeg default"}; ${new Date().toISOString()}`,
);
console.log("| part | CPU-s | wall s | load (1 min) |");
console.log("|---|---:|---:|---:|");
for (const lf of ["exact", "skip"] as LoopFilter[]) {
  await timed(`decode only, loop filter ${lf}`, async () => {
    const p = Bun.spawn(
      [
        bins.ffmpeg,
        "-hide_banner",
        "-nostdin",
        ...decodeSkipArgs(skip, lf),
        ...(threads ? ["-threads", String(threads)] : []),
        "-i",
        file,
        "-map",
        "0:v:0",
        "-f",
        "null",
        "-",
      ],
      { stdout: "ignore", stderr: "ignore" },
    );
    await p.exited;
  });
  const base: SampleFramesOptions = {
    size: 224,
    everySecs: 1,
    keyframesOnly: false,
    skipFrames: skip,
    loopFilter: lf,
    durationSecs: info.durationSecs,
    threads,
  };
  const count = async (o: SampleFramesOptions) => {
    let n = 0;
    for await (const _ of sampleFrames(bins, file, o)) n++;
    return n;
  };
  await timed(`+ 224 px sampler, loop filter ${lf}`, () => count(base));
  await timed(`+ cut analysis at 160 px, loop filter ${lf}`, () => count({ ...base, cuts: {} }));
  const dir = mkdtempSync(join(work, "j"));
  await timed(`+ 320 px JPEGs and poster (the pipeline's graph), loop filter ${lf}`, () =>
    count({
      ...base,
      cuts: {},
      jpegs: { dir, width: 320 },
      poster: { path: join(dir, "poster.jpg"), atSecs: 6, width: 640 },
    }),
  );
}
rmSync(work, { recursive: true, force: true });
