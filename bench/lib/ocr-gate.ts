/**
 * The cheap text test (src/ocr/frame-test.ts mayHaveText), today's step threshold beside the one
 * before (48), in the same run: false negatives on caption frames, on captions drawn over real
 * footage (frames of the ingest bench clip: white with a shadow, yellow) and on 24 px text at falling
 * contrast over flat gray; and its pass rate on real footage as the OCR stage decodes it (1 frame/s,
 * gray, ≤ 1280×720): the ingest bench clip and every clip in ../shared/media/video/clips (at most 60
 * frames each; the ones with burned-in text are marked). Run by `bench/ocr-bench.ts --gate` (issue 14;
 * the readings are tesseract's, as then).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { OcrEngine, type GrayFrame } from "../../src/ocr/engine.ts";
import { EDGE_STEP, mayHaveText, mayHaveTextAt } from "../../src/ocr/frame-test.ts";
import { devOcrPaths } from "../../src/ocr/paths.ts";
import { readFrame } from "../../src/ocr/read-frame.ts";
import { plausible } from "../../src/ocr/tracks.ts";
import { probeMedia } from "../../src/media/probe.ts";
import { sampleTextFrames } from "../../src/media/text-frames.ts";
import { makeBenchClip } from "./bench-clip.ts";
import { editDistance, LATIN_FONTS, LATIN_WORDS, rng } from "./ocr-frames.ts";

/** The cheap test's step threshold before issue 14 (frame-test.ts EDGE_STEP is today's). */
const OLD_EDGE_STEP = 48;
/** Clips in ../shared/media/video/clips that show burned-in text (their frames may rightly pass). */
const CLIPS_WITH_TEXT = ["exo_roadtrip-vp92-10bit.webm", "exo_handwritten_number_1.mp4"];
const load = () => loadavg().map((x) => Math.round(x * 100) / 100);
const FONT_FILES = LATIN_FONTS;
const WORDS = LATIN_WORDS;

async function runFfmpeg(ffmpeg: string, args: string[]) {
  const p = Bun.spawn([ffmpeg, "-hide_banner", "-loglevel", "error", "-y", ...args], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  if (code !== 0) throw new Error(`ffmpeg failed: ${err}`);
}

/** `captionFrames`: the CER set's caption frames as verdicts of both thresholds. */
export async function gateBench(
  tools: { ffmpeg: string; ffprobe: string },
  work: string,
  clipsDir: string,
  captionFrames: { now: boolean; old: boolean }[],
  benchClipArg?: string,
) {
  const ffmpeg = tools.ffmpeg;
  const run = (args: string[]) => runFfmpeg(ffmpeg, args);
  const CLIPS = clipsDir;
  const loadStart = load();
  const engine = new OcrEngine({ paths: devOcrPaths() });
  const both = (f: GrayFrame) => ({ now: mayHaveText(f), old: mayHaveTextAt(f, OLD_EDGE_STEP) });
  const sum = (xs: { now: boolean; old: boolean }[]) => ({
    n: xs.length,
    now: xs.filter((x) => x.now).length,
    old: xs.filter((x) => x.old).length,
  });
  const benchClip = benchClipArg ?? (await makeBenchClip(ffmpeg, join(work, "bench-clip.mp4"), { secs: 20, gop: 60 }));
  const bins = { ffmpeg: tools.ffmpeg, ffprobe: tools.ffprobe };
  async function decoded(file: string, max = 60): Promise<GrayFrame[]> {
    const info = await probeMedia(bins as any, file);
    const w = info.width!;
    const h = info.displayAspectRatio ? Math.max(2, Math.round(w / info.displayAspectRatio)) : info.height!;
    const out: GrayFrame[] = [];
    for await (const f of sampleTextFrames(bins as any, file, {
      displayWidth: w,
      displayHeight: h,
      keyframesOnly: false,
      hdr: info.hdr,
    })) {
      out.push(f);
      if (out.length >= max) break;
    }
    return out;
  }
  // Real footage without text, as the OCR stage sees it.
  // Frames the old threshold passed and today's does not are read anyway: the lines OCR would have
  // kept from them (plausible ones) are text lost to the stricter test.
  const footage: {
    clip: string;
    text: boolean;
    n: number;
    now: number;
    old: number;
    newlySkipped: number;
    linesLost: string[];
  }[] = [];
  async function judge(clip: string, text: boolean, frames: GrayFrame[]) {
    const verdicts = frames.map(both);
    const linesLost: string[] = [];
    let newlySkipped = 0;
    for (const [i, v] of verdicts.entries()) {
      if (!v.old || v.now) continue;
      newlySkipped++;
      linesLost.push(...(await readFrame(engine, frames[i])).lines.filter(plausible).map((l) => l.text));
    }
    footage.push({ clip, text, ...sum(verdicts), newlySkipped, linesLost });
  }
  const benchFrames = await decoded(benchClip);
  await judge(`bench clip (${benchClip.split("/").pop()})`, false, benchFrames);
  const shared = existsSync(CLIPS)
    ? readdirSync(CLIPS)
        .filter((c) => /\.(mp4|webm|avi|ts|3gp|mkv|mov)$/.test(c))
        .sort()
    : [];
  for (const c of shared) await judge(c, CLIPS_WITH_TEXT.includes(c), await decoded(join(CLIPS, c)));
  // Captions over real footage: frames of the bench clip, 24 and 32 px, white with a shadow and plain yellow.
  // Each is also read (as the stage would if the test let it through): a false negative matters
  // where the text is readable at all (yellow over bright footage is nearly white in luma).
  const over: { style: string; size: number; now: boolean; old: boolean; text: string; read: string; cer: number }[] =
    [];
  const r = rng(14);
  for (const [k, f] of benchFrames.filter((_, i) => i % 2 === 0).entries()) {
    const style = k % 2 ? "fontcolor=yellow" : "fontcolor=white:shadowx=2:shadowy=2:shadowcolor=black";
    const size = k % 4 < 2 ? 24 : 32;
    const words = Array.from({ length: 4 }, () => WORDS[Math.floor(r() * WORDS.length)]).join(" ");
    const src = join(work, `bg${k}.gray`);
    const out = join(work, `over${k}.gray`);
    writeFileSync(src, f.pixels);
    await run([
      "-f",
      "rawvideo",
      "-pix_fmt",
      "gray",
      "-s",
      `${f.width}x${f.height}`,
      "-i",
      src,
      "-vf",
      `format=rgb24,drawtext=fontfile=${FONT_FILES["DejaVu Sans"]}:text='${words}':fontsize=${size}:${style}:x=64:y=h-th-48,format=gray`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      out,
    ]);
    const frame = { width: f.width, height: f.height, pixels: new Uint8Array(readFileSync(out)) };
    const read = (await readFrame(engine, frame)).lines
      .filter(plausible)
      .map((l) => l.text)
      .join(" ")
      .replace(/\s+/g, " ")
      .trim();
    over.push({
      style: style.split(":")[0] + (style.includes("shadow") ? " + shadow" : ""),
      size,
      ...both(frame),
      text: words,
      read,
      cer: Math.min(1, editDistance(words, read) / words.length),
    });
  }
  await engine.close();
  // 24 px text over flat gray 0x40, brighter by `c` levels.
  const contrast: { levels: number; now: boolean; old: boolean }[] = [];
  for (const c of [32, 48, 64, 80, 96, 112, 128, 160]) {
    const out = join(work, `contrast${c}.gray`);
    const v = (0x40 + c).toString(16).padStart(2, "0");
    await run([
      "-f",
      "lavfi",
      "-i",
      "color=c=0x404040:size=1280x720",
      "-vf",
      `drawtext=fontfile=${FONT_FILES["DejaVu Sans"]}:text='Harbour museum opening hours':fontsize=24:fontcolor=0x${v}${v}${v}:x=64:y=300,format=gray`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      out,
    ]);
    contrast.push({ levels: c, ...both({ width: 1280, height: 720, pixels: new Uint8Array(readFileSync(out)) }) });
  }
  const captions = {
    n: captionFrames.length,
    now: captionFrames.filter((x) => x.now).length,
    old: captionFrames.filter((x) => x.old).length,
  };
  const readable = over.filter((x) => x.cer <= 0.05);
  return {
    edgeStep: EDGE_STEP,
    oldEdgeStep: OLD_EDGE_STEP,
    captions,
    over,
    overSum: sum(over),
    overReadable: sum(readable),
    contrast,
    footage,
    loadStart,
    loadEnd: load(),
  };
}
