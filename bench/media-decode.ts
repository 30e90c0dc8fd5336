/**
 * Decode-speed measurement for src/media (not a test). Generates a 1080p H.264 clip with ffmpeg
 * (testsrc2, 24 fps, 2 s GOP via -g 48, a sine track; cached in the temp dir), then times:
 * raw decode (full vs keyframes), frame sampling, shot detection (variants), audio extraction and
 * thumbnails. Prints a table and writes bench/results/media-decode.json.
 *
 *   node_modules/.bin/bun bench/media-decode.ts [--secs 60] [--repeat 1] [--threads N]
 *
 * "× realtime" = clip seconds / wall seconds; "per core" = clip seconds / CPU seconds the tools
 * used (user + sys of the children), which moves far less when other work shares the CPU.
 * Best of --repeat runs.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { streamAudio16kMono } from "../src/media/audio.ts";
import { sampleFrames } from "../src/media/frames.ts";
import { runTool, type MediaBins } from "../src/media/process.ts";
import { detectShotBoundaries } from "../src/media/shots.ts";
import { writeThumbnail, writeThumbnails } from "../src/media/thumbnails.ts";
import { mediaBins } from "../test/helpers/media.ts";

const { values } = parseArgs({
  options: {
    secs: { type: "string", default: "60" },
    repeat: { type: "string", default: "1" },
    threads: { type: "string" },
  },
});
const SECS = Number(values.secs);
const REPEAT = Math.max(1, Number(values.repeat));
const THREADS = values.threads ? Number(values.threads) : undefined;
const bins: MediaBins = mediaBins();

async function ffmpeg(args: string[]): Promise<void> {
  const r = await runTool(bins.ffmpeg, ["-hide_banner", "-nostdin", "-v", "error", ...args], {
    timeoutMs: 30 * 60_000,
  });
  if (r.code !== 0) throw new Error(`ffmpeg failed: ${r.tail.join("\n")}`);
}

async function makeClip(): Promise<string> {
  const dir = join(tmpdir(), "vsearch-bench");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `testsrc2-1080p-${SECS}s-g48.mp4`);
  if (!existsSync(file)) {
    console.error(`generating ${file} …`);
    const tmp = `${file}.tmp.mp4`;
    await ffmpeg([
      "-y",
      "-f",
      "lavfi",
      "-i",
      `testsrc2=s=1920x1080:r=24:d=${SECS}`,
      "-f",
      "lavfi",
      "-i",
      `sine=f=440:d=${SECS}`,
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-g",
      "48",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-b:a",
      "96k",
      tmp,
    ]);
    await Bun.write(file, Bun.file(tmp));
    await Bun.file(tmp).delete();
  }
  return file;
}

interface Row {
  name: string;
  what: string;
  wallSecs: number;
  /** CPU seconds (user + sys) of the ffmpeg/ffprobe children: steadier than wall time on a shared box. */
  cpuSecs: number;
  xRealtime: number;
  /** Clip seconds per child CPU second: what one fully available core would do. */
  xRealtimePerCore: number;
  detail?: string;
}

/** user + sys time of this process's reaped children, seconds (Linux, 10 ms ticks). */
function childCpuSecs(): number {
  const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
  return (Number(f[13]) + Number(f[14])) / 100;
}

async function measure(name: string, what: string, fn: () => Promise<string | void>): Promise<Row> {
  let wall = Infinity;
  let cpu = Infinity;
  let detail: string | undefined;
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now();
    const c = childCpuSecs();
    detail = (await fn()) ?? undefined;
    wall = Math.min(wall, (performance.now() - t) / 1000);
    cpu = Math.min(cpu, childCpuSecs() - c);
  }
  const row: Row = {
    name,
    what,
    wallSecs: +wall.toFixed(3),
    cpuSecs: +cpu.toFixed(2),
    xRealtime: +(SECS / wall).toFixed(1),
    xRealtimePerCore: +(SECS / Math.max(cpu, 0.01)).toFixed(1),
    detail,
  };
  console.error(
    `${name.padEnd(28)} ${row.wallSecs.toFixed(2).padStart(7)} s wall ${row.cpuSecs.toFixed(2).padStart(7)} s cpu  ${detail ?? ""}`,
  );
  return row;
}

const threadArgs = THREADS ? ["-threads", String(THREADS)] : [];
const clip = await makeClip();
const rows: Row[] = [];
const countFrames = async (keyframesOnly: boolean) => {
  const s = sampleFrames(bins, clip, { keyframesOnly, threads: THREADS });
  for await (const _ of s) void _;
  return `${s.stats.framesEmitted} frames of 224×224`;
};

rows.push(
  await measure("decode all (null)", "ffmpeg -f null, every frame", () =>
    ffmpeg([...threadArgs, "-i", clip, "-map", "0:v:0", "-f", "null", "-"]),
  ),
);
rows.push(
  await measure("decode keyframes (null)", "-skip_frame nokey -f null", () =>
    ffmpeg([...threadArgs, "-skip_frame", "nokey", "-i", clip, "-map", "0:v:0", "-f", "null", "-"]),
  ),
);
rows.push(await measure("sampleFrames all", "1 fps → 224² rgb24, full decode", () => countFrames(false)));
rows.push(await measure("sampleFrames keyframes", "1 fps → 224² rgb24, keyframes only", () => countFrames(true)));
const shots = (opts: Parameters<typeof detectShotBoundaries>[2]) => async () =>
  `${(await detectShotBoundaries(bins, clip, { threads: THREADS, ...opts })).length} boundaries`;
rows.push(await measure("shots full, 160 px", "scale=160 then scene (default)", shots({})));
rows.push(await measure("shots full, native res", "scene on full-size RGB", shots({ analysisWidth: 4096 })));
rows.push(await measure("shots keyframes, 160 px", "-skip_frame nokey", shots({ keyframesOnly: true })));
rows.push(
  await measure("shots full, no deblock", "-skip_loop_filter all (not used)", () =>
    ffmpeg([
      ...threadArgs,
      "-skip_loop_filter",
      "all",
      "-i",
      clip,
      "-map",
      "0:v:0",
      "-vf",
      "scale=160:-2:flags=fast_bilinear,select='gt(scene,0.3)'",
      "-f",
      "null",
      "-",
    ]),
  ),
);
rows.push(
  await measure("audio 16 kHz mono", "f32le, 30 s windows", async () => {
    let n = 0;
    for await (const w of streamAudio16kMono(bins, clip)) n += w.samples.length;
    return `${n} samples`;
  }),
);
const THUMBS = 20;
const times = Array.from({ length: THUMBS }, (_, i) => ((i + 0.5) * SECS) / THUMBS);
const thumbDir = join(tmpdir(), "vsearch-bench", "thumbs");
mkdirSync(thumbDir, { recursive: true });
rows.push(
  await measure(`${THUMBS} thumbnails, batched`, "writeThumbnails, batch 8", () =>
    writeThumbnails(
      bins,
      clip,
      times.map((t, i) => ({ timestampSecs: t, outPath: join(thumbDir, `b${i}.jpg`) })),
    ),
  ),
);
rows.push(
  await measure(`${THUMBS} thumbnails, one by one`, "writeThumbnail × N", async () => {
    for (const [i, t] of times.entries()) await writeThumbnail(bins, clip, t, join(thumbDir, `s${i}.jpg`));
  }),
);

console.log(`\n1080p H.264 testsrc2, ${SECS} s, 24 fps, GOP 48; ${cpus().length} CPUs; best of ${REPEAT}\n`);
console.log(
  "| measurement | what | wall s | × realtime (wall) | CPU s | × realtime per core | result |\n|---|---|---:|---:|---:|---:|---|",
);
for (const r of rows) {
  console.log(
    `| ${r.name} | ${r.what} | ${r.wallSecs.toFixed(2)} | ${r.xRealtime} | ${r.cpuSecs.toFixed(2)} | ${r.xRealtimePerCore} | ${r.detail ?? ""} |`,
  );
}

const out = join(import.meta.dirname, "results");
mkdirSync(out, { recursive: true });
writeFileSync(
  join(out, "media-decode.json"),
  JSON.stringify(
    {
      clip: { codec: "h264", width: 1920, height: 1080, fps: 24, gop: 48, secs: SECS },
      cpus: cpus().length,
      repeat: REPEAT,
      threads: THREADS ?? "auto",
      measuredAt: new Date().toISOString(),
      rows,
    },
    null,
    2,
  ) + "\n",
);
