/**
 * On-screen text (issues 13, 14, 28), both engines side by side in one run:
 *   1. character error rate by text height and script: 1280×720 gray frames made with ffmpeg
 *      `drawtext` — Latin in four fonts (DejaVu Sans / Serif, Liberation Sans / Mono), Chinese in
 *      WenQuanYi Micro Hei — at 12–48 px over flat colours, over a footage stand-in (a moving
 *      pattern blurred into soft colour with grain; with a caption box, or white text with a dark
 *      outline) and over frames of real footage (the share clip below; white with a shadow), each
 *      read as the `ocr` stage reads a frame (PP-OCR: src/ocr/ppocr/read.ts; tesseract:
 *      src/ocr/read-frame.ts) and filtered as it filters (`plausible`). CER = edit distance
 *      between the drawn text and the plausible lines joined by spaces over the drawn text's length
 *      (whitespace collapsed; CJK compared without spaces); text height = drawtext's fontsize;
 *      targets: Latin no worse than tesseract at ≥ 24 px, Chinese ≤ 5 % at ≥ 24 px;
 *   2. the real burned-in caption of ../shared/media/video/clips/exo_roadtrip-vp92-10bit.webm
 *      (426×240 VP9 10-bit, ~10 px capitals) as the stage decodes it;
 *   3. ms per frame read (p50 / p90 of the frames of part 1), each engine one thread;
 *   4. the OCR share of a full ingest to done: a 60 s 1080p H.264 clip of real footage (the shared
 *      clips scaled and cut together, bench/lib/bench-clip.ts) with x264's default keyframe interval
 *      and a caption burned in from 20 to 45 s, with the tiny CLIP (bench/lib/ocr-share.ts), per
 *      engine in-process, and through compiled binaries given with --binary LABEL=PATH (e.g. main's
 *      build as "before"). Target: OCR ≤ 25 % of the job.
 *   --gate: also the cheap text test's false negatives and pass rates (bench/lib/ocr-gate.ts, issue 14).
 *
 * Run: node_modules/.bin/bun bench/ocr-bench.ts [--quick] [--cer-only] [--share-only] [--gate]
 *        [--clip FILE (the share clip, made here if absent)] [--binary LABEL=PATH[@ENGINE] …]
 *        [--binaries-only (no in-process share rows)]
 *      → prints tables, writes bench/results/ocr.json
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { OcrEngine, type GrayFrame } from "../src/ocr/engine.ts";
import { changed, mayHaveText, mayHaveTextAt, signature } from "../src/ocr/frame-test.ts";
import { devOcrPaths } from "../src/ocr/paths.ts";
import { PpOcrEngine } from "../src/ocr/ppocr/engine.ts";
import { readWithPpOcr } from "../src/ocr/ppocr/read.ts";
import { readFrame } from "../src/ocr/read-frame.ts";
import { plausible } from "../src/ocr/tracks.ts";
import type { TextEngine } from "../src/ocr/video-text.ts";
import { probeMedia } from "../src/media/probe.ts";
import { sampleTextFrames } from "../src/media/text-frames.ts";
import { resolveToolFiles } from "../src/runtime/native-files.ts";
import {
  BACKGROUNDS,
  type BackgroundName,
  CJK_FONT,
  CJK_WORDS,
  cer,
  drawnFrame,
  haveCjkFont,
  LATIN_FONTS,
  LATIN_WORDS,
  rng,
} from "./lib/ocr-frames.ts";
import { gateBench } from "./lib/ocr-gate.ts";
import {
  makeShareClip,
  SHARE_CAPTION_SECS,
  type ShareRow,
  shareInProcess,
  shareThroughBinary,
} from "./lib/ocr-share.ts";

const ROOT = join(import.meta.dirname, "..");
const SHARED =
  [join(ROOT, "..", "shared"), join(ROOT, "..", "..", "shared")].find(existsSync) ?? join(ROOT, "..", "shared");
const CLIPS = join(SHARED, "media", "video", "clips");
const ROADTRIP = join(CLIPS, "exo_roadtrip-vp92-10bit.webm");
const ROADTRIP_TEXT = "WE TOOK A ROAD TRIP FROM SF TO LA TO SHOOT SOME HDR TEST FOOTAGE";
const argv = process.argv;
const flag = (f: string) => argv.includes(f);
const SIZES = flag("--quick") ? [16, 24, 48] : [12, 16, 20, 24, 32, 48];
const tools = resolveToolFiles();
const bins = { ffmpeg: tools.ffmpeg, ffprobe: tools.ffprobe };
const work = mkdtempSync(join(tmpdir(), "vsearch-ocr-bench-"));
const load = () => loadavg().map((x) => Math.round(x * 10) / 10);
const ENGINES = ["ppocr", "tesseract"] as const;
type EngineName = (typeof ENGINES)[number];

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN;
};
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const p100 = (x: number) => `${(x * 100).toFixed(1)} %`;

function newEngine(name: EngineName): TextEngine {
  const paths = devOcrPaths();
  return name === "ppocr"
    ? new PpOcrEngine({ workerFile: paths.ppocr.workerFile, files: paths.ppocr, workers: 1 })
    : new OcrEngine({ paths, workers: 1 });
}

/** The plausible lines of one frame as the stage reads it, joined; and how long the read took. */
async function read(engine: TextEngine, f: GrayFrame): Promise<{ text: string; ms: number }> {
  const t0 = performance.now();
  const lines =
    engine.kind === "ppocr" ? (await readWithPpOcr(engine, f, [])).lines : (await readFrame(engine, f)).lines;
  const ms = performance.now() - t0;
  return {
    text: lines
      .filter(plausible)
      .map((l) => l.text)
      .join(" "),
    ms,
  };
}

interface CerRow {
  script: "Latin" | "CJK";
  font: string;
  size: number;
  background: BackgroundName;
  text: string;
  read: Record<EngineName, string>;
  cer: Record<EngineName, number>;
  /** Latin compared without spaces (how much of the error is spacing). */
  cerNoSpaces: Record<EngineName, number>;
  ms: Record<EngineName, number>;
  cheap: boolean;
  cheapOld: boolean;
}

/**
 * Frames of real footage, as the OCR stage decodes them, to draw text over: every 5 s outside the
 * share clip's own caption (shown 20–45 s), which would otherwise be read too and count as errors.
 */
async function footageFrames(clip: string, n: number): Promise<GrayFrame[]> {
  const info = await probeMedia(bins, clip);
  const out: GrayFrame[] = [];
  for await (const f of sampleTextFrames(bins, clip, {
    displayWidth: info.width!,
    displayHeight: info.height!,
    keyframesOnly: false,
    everySecs: 5,
  })) {
    if (f.timestamp < SHARE_CAPTION_SECS[0] - 1 || f.timestamp > SHARE_CAPTION_SECS[1] + 1) out.push(f);
    if (out.length >= n) break;
  }
  return out;
}

async function cerBench(realFrames: GrayFrame[]) {
  const engines = Object.fromEntries(ENGINES.map((e) => [e, newEngine(e)])) as Record<EngineName, TextEngine>;
  const warm: GrayFrame = { width: 64, height: 64, pixels: new Uint8Array(64 * 64).fill(255) };
  for (const e of ENGINES) await read(engines[e], warm); // workers start outside the timings
  const r = rng(28);
  const rows: CerRow[] = [];
  const loadStart = load();
  const scripts: ["Latin" | "CJK", Record<string, string>][] = [["Latin", LATIN_FONTS]];
  if (haveCjkFont()) scripts.push(["CJK", { "WenQuanYi Micro Hei": CJK_FONT }]);
  else console.log(`(no ${CJK_FONT}: Chinese not measured; Debian package fonts-wqy-microhei)`);
  let i = 0;
  for (const [script, fonts] of scripts) {
    for (const [bgName, bg] of Object.entries(BACKGROUNDS) as [
      BackgroundName,
      (typeof BACKGROUNDS)[BackgroundName],
    ][]) {
      for (const [font, file] of Object.entries(fonts)) {
        for (const size of SIZES) {
          const text =
            script === "Latin"
              ? Array.from({ length: size >= 32 ? 3 : 4 }, () => LATIN_WORDS[Math.floor(r() * LATIN_WORDS.length)])
                  .map((w, k) => (k === 0 ? w[0].toUpperCase() + w.slice(1) : w))
                  .join(" ")
              : Array.from({ length: size >= 32 ? 3 : 4 }, () => CJK_WORDS[Math.floor(r() * CJK_WORDS.length)]).join(
                  "",
                );
          const under = bg.real ? realFrames[i % realFrames.length] : undefined;
          const f = await drawnFrame(bins.ffmpeg, work, `f${i++}`, { ...bg, under }, file, size, text);
          const row = {
            script,
            font,
            size,
            background: bgName,
            text,
            read: {},
            cer: {},
            cerNoSpaces: {},
            ms: {},
            cheap: mayHaveText(f),
            cheapOld: mayHaveTextAt(f, 48),
          } as CerRow;
          for (const e of ENGINES) {
            const got = await read(engines[e], f);
            row.read[e] = got.text;
            row.ms[e] = got.ms;
            row.cer[e] = cer(text, got.text, { cjk: script === "CJK" });
            row.cerNoSpaces[e] = cer(text, got.text, { noSpaces: true });
          }
          rows.push(row);
        }
      }
    }
  }
  // Frames without text: what a read costs there, and whether the cheap test skips them.
  const blank: { bg: string; cheap: boolean; ms: Record<EngineName, number> }[] = [];
  for (const [bgName, bg] of Object.entries(BACKGROUNDS).filter(([, b]) => !b.real)) {
    const f = await drawnFrame(bins.ffmpeg, work, `blank${blank.length}`, bg, LATIN_FONTS["DejaVu Sans"], 10, " ");
    const ms = {} as Record<EngineName, number>;
    for (const e of ENGINES) ms[e] = (await read(engines[e], f)).ms;
    blank.push({ bg: bgName, cheap: mayHaveText(f), ms });
  }
  const f0 = realFrames[0];
  let t0 = performance.now();
  for (let k = 0; k < 20; k++) mayHaveText(f0);
  const cheapMs = (performance.now() - t0) / 20;
  t0 = performance.now();
  for (let k = 0; k < 20; k++) changed(signature(f0), signature(f0));
  const sigMs = (performance.now() - t0) / 40;
  for (const e of ENGINES) await engines[e].close();
  return { rows, blank, cheapMs, sigMs, loadStart, loadEnd: load() };
}

/** The road-trip clip's real caption, as the stage decodes it (native 426×240, never upscaled). */
async function roadtrip() {
  if (!existsSync(ROADTRIP)) return null;
  const info = await probeMedia(bins, ROADTRIP);
  const out: { t: number; engine: EngineName; read: string; cer: number; ms: number }[] = [];
  const engines = Object.fromEntries(ENGINES.map((e) => [e, newEngine(e)])) as Record<EngineName, TextEngine>;
  for await (const f of sampleTextFrames(bins, ROADTRIP, {
    displayWidth: info.width!,
    displayHeight: info.height!,
    keyframesOnly: false,
    hdr: info.hdr,
  })) {
    if (f.timestamp < 0.5) continue; // the caption fades in
    for (const e of ENGINES) {
      const got = await read(engines[e], f);
      out.push({ t: f.timestamp, engine: e, read: got.text, cer: cer(ROADTRIP_TEXT, got.text), ms: got.ms });
    }
  }
  for (const e of ENGINES) await engines[e].close();
  return out;
}

function printCer(c: Awaited<ReturnType<typeof cerBench>>) {
  console.log(
    `\nCER by text height and script (1280×720; load ${c.loadStart.join(" ")} → ${c.loadEnd.join(" ")}, ${cpus().length} cores, ${cpus()[0]?.model})`,
  );
  for (const script of ["Latin", "CJK"] as const) {
    const rs = c.rows.filter((x) => x.script === script);
    if (!rs.length) continue;
    console.log(`\n${script}: size px | ${Object.keys(BACKGROUNDS).join(" | ")} | all — PP-OCR / tesseract`);
    for (const size of SIZES) {
      const at = rs.filter((x) => x.size === size);
      const cell = (xs: CerRow[]) => ENGINES.map((e) => p100(mean(xs.map((x) => x.cer[e])))).join(" / ");
      console.log(
        `${size} | ${Object.keys(BACKGROUNDS)
          .map((b) => cell(at.filter((x) => x.background === b)))
          .join(" | ")} | ${cell(at)}`,
      );
    }
    const ge24 = rs.filter((x) => x.size >= 24);
    console.log(
      `${script} CER at ≥ 24 px: ${ENGINES.map((e) => `${e} ${p100(mean(ge24.map((x) => x.cer[e])))}`).join(", ")}` +
        (script === "Latin"
          ? `; without spaces: ${ENGINES.map((e) => `${e} ${p100(mean(ge24.map((x) => x.cerNoSpaces[e])))}`).join(", ")}`
          : ""),
    );
    for (const x of ge24.filter((x) => ENGINES.some((e) => x.cer[e] > 0.05)))
      console.log(
        `  ≥ 24 px above 5 %: ${x.size} px ${x.font} / ${x.background}: "${x.text}" → ${ENGINES.map((e) => `${e} "${x.read[e]}"`).join(", ")}`,
      );
  }
  const ms = (e: EngineName) => c.rows.map((x) => x.ms[e]);
  console.log(
    `\nms per frame read (one thread each): ${ENGINES.map((e) => `${e} p50 ${pct(ms(e), 0.5).toFixed(0)} / p90 ${pct(ms(e), 0.9).toFixed(0)}`).join("; ")}`,
  );
  console.log(
    `frames without text: ${c.blank.map((b) => `${b.bg}: ${ENGINES.map((e) => `${e} ${b.ms[e].toFixed(0)} ms`).join(", ")} (cheap test ${b.cheap ? "passes" : "skips it"})`).join("; ")}; cheap test ${c.cheapMs.toFixed(2)} ms, signature ${c.sigMs.toFixed(2)} ms`,
  );
  console.log(`cheap test said "text" on ${c.rows.filter((x) => x.cheap).length}/${c.rows.length} text frames`);
}

function printShare(rows: ShareRow[]) {
  console.log(
    "\nOCR share of a full ingest, 60 s 1080p H.264 real footage, x264 default keyframes, caption 20–45 s, tiny CLIP",
  );
  console.log(
    "how | engine | ready ms | done ms | ocr ms | OCR share | CPU-s ready / ocr | caption found | load | ocr stage",
  );
  for (const x of rows)
    console.log(
      `${x.how} | ${x.engine} | ${Number.isNaN(x.readyMs) ? "–" : x.readyMs.toFixed(0)} | ${x.doneMs.toFixed(0)} | ${x.ocrMs} | ${p100(x.share)} | ${x.cpuReady?.toFixed(2) ?? "–"} / ${x.cpuOcr?.toFixed(2) ?? "–"} | ${x.found} | ${x.load.join(" → ")} | ${x.ocrReason}`,
    );
}

async function main() {
  const out: Record<string, unknown> = { at: new Date().toISOString(), cores: cpus().length, cpu: cpus()[0]?.model };
  const clipArg = argv.indexOf("--clip");
  const clip =
    clipArg > 0 && existsSync(argv[clipArg + 1])
      ? argv[clipArg + 1]
      : await makeShareClip(
          bins.ffmpeg,
          clipArg > 0 ? argv[clipArg + 1] : join(work, "share.mp4"),
          LATIN_FONTS["DejaVu Sans"],
        );
  if (!flag("--share-only")) {
    const real = await footageFrames(clip, 6);
    const c = await cerBench(real);
    printCer(c);
    out.cer = c;
    const rt = await roadtrip();
    if (rt) {
      console.log(`\nexo_roadtrip-vp92-10bit.webm (426×240), truth "${ROADTRIP_TEXT}":`);
      for (const x of rt)
        console.log(`  ${x.t.toFixed(1)} s ${x.engine}: "${x.read}" CER ${p100(x.cer)}, ${x.ms.toFixed(0)} ms`);
      out.roadtrip = rt;
    }
    if (flag("--gate")) {
      out.gate = await gateBench(
        bins,
        work,
        CLIPS,
        c.rows.map((x) => ({ now: x.cheap, old: x.cheapOld })),
      );
      console.log(`\ncheap text test: ${JSON.stringify(out.gate)}`);
    }
  }
  if (!flag("--cer-only")) {
    const rows: ShareRow[] = [];
    if (!flag("--binaries-only")) for (const e of ENGINES) rows.push(await shareInProcess(work, clip, e));
    for (let k = argv.indexOf("--binary"); k > 0; k = argv.indexOf("--binary", k + 1)) {
      // LABEL=PATH[@ENGINE]: a binary without PP-OCR (main before issue 28) runs tesseract whatever it is told.
      const [label, spec] = argv[k + 1].split("=");
      const [path, only] = spec.split("@");
      for (const e of ENGINES.filter((x) => !only || x === only))
        rows.push(await shareThroughBinary(work, clip, path, label, e));
    }
    printShare(rows);
    out.share = rows;
  }
  mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
  writeFileSync(join(ROOT, "bench", "results", "ocr.json"), JSON.stringify(out, null, 2));
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}
