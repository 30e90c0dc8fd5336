/**
 * Frames for the OCR benchmark (bench/ocr-bench.ts): lines of text drawn by ffmpeg `drawtext` on
 * 1280×720 gray frames — Latin in four fonts, Chinese in WenQuanYi Micro Hei — over flat colours,
 * over a footage stand-in (a moving pattern blurred into soft colour, with grain) and over frames
 * of real footage; and the character error rate of a reading.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { GrayFrame } from "../../src/ocr/engine.ts";

const FONTS = "/usr/share/fonts/truetype";
export const LATIN_FONTS: Record<string, string> = {
  "DejaVu Sans": `${FONTS}/dejavu/DejaVuSans.ttf`,
  "DejaVu Serif": `${FONTS}/dejavu/DejaVuSerif.ttf`,
  "Liberation Sans": `${FONTS}/liberation/LiberationSans-Regular.ttf`,
  "Liberation Mono": `${FONTS}/liberation/LiberationMono-Regular.ttf`,
};
export const CJK_FONT = `${FONTS}/wqy/wqy-microhei.ttc`;
export const haveCjkFont = () => existsSync(CJK_FONT);

export const LATIN_WORDS =
  "harbour museum quarterly revenue station platform weather forecast lighthouse northern bridge closed tickets gallery opening hours welcome summer festival market street river valley research budget meeting chapter".split(
    " ",
  );
/** Common two- to four-character words (signs, titles, captions). */
export const CJK_WORDS =
  "季度 预算 会议 北京 上海 欢迎 明天 天气 预报 地铁 站台 出口 博物馆 开放 时间 市场 街道 河流 研究 报告 第一章 新闻 直播 比赛 结果 公司 年度 总结 旅行 城市 灯塔 节日 门票 关闭 营业 夏季 图书馆 火车站".split(
    " ",
  );

/** How a line is drawn over its background (drawtext options). */
export const BACKGROUNDS = {
  "flat, white on navy": { src: "color=c=navy:size=1280x720", style: "fontcolor=white", real: false },
  "flat, black on yellow": { src: "color=c=yellow:size=1280x720", style: "fontcolor=black", real: false },
  "footage, caption box": {
    src: "testsrc2=size=1280x720:rate=10,trim=start=2,gblur=sigma=24,noise=alls=14:allf=t",
    style: "fontcolor=white:box=1:boxcolor=black:boxborderw=8",
    real: false,
  },
  "footage, outlined": {
    src: "testsrc2=size=1280x720:rate=10,trim=start=3,gblur=sigma=24,noise=alls=14:allf=t",
    style: "fontcolor=white:borderw=2:bordercolor=black",
    real: false,
  },
  /** Frames of real footage (the share clip), white text with a drop shadow. */
  "real footage, shadow": { src: "", style: "fontcolor=white:shadowx=2:shadowy=2:shadowcolor=black", real: true },
} as const;
export type BackgroundName = keyof typeof BACKGROUNDS;

export function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

async function run(ffmpeg: string, args: string[]): Promise<void> {
  const p = Bun.spawn([ffmpeg, "-hide_banner", "-loglevel", "error", "-y", ...args], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  if (code !== 0) throw new Error(`ffmpeg failed: ${err}`);
}

/**
 * One 1280×720 gray frame with `text` drawn at x = 64, centred vertically: over a lavfi source, or
 * over `under` (a gray frame of real footage).
 */
export async function drawnFrame(
  ffmpeg: string,
  work: string,
  name: string,
  bg: { src: string; style: string; under?: GrayFrame },
  font: string,
  size: number,
  text: string,
): Promise<GrayFrame> {
  const out = join(work, `${name}.gray`);
  const draw = `drawtext=fontfile=${font}:text='${text.replace(/'/g, "")}':fontsize=${size}:${bg.style}:x=64:y=(h-th)/2`;
  if (bg.under) {
    const src = join(work, `${name}.bg.gray`);
    writeFileSync(src, bg.under.pixels);
    await run(ffmpeg, [
      ...["-f", "rawvideo", "-pix_fmt", "gray", "-s", `${bg.under.width}x${bg.under.height}`, "-i", src],
      ...["-vf", `format=rgb24,${draw},format=gray`, "-frames:v", "1", "-f", "rawvideo", out],
    ]);
  } else {
    await run(ffmpeg, [
      "-f",
      "lavfi",
      "-i",
      bg.src,
      "-vf",
      `${draw},format=gray`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      out,
    ]);
  }
  return { width: 1280, height: 720, pixels: new Uint8Array(readFileSync(out)) };
}

export function editDistance(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const cur = [i];
    for (let j = 1; j <= y.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] === y[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[y.length];
}

/**
 * Character error rate of `read` against `truth`: edit distance over the truth's length (capped at
 * 1), whitespace collapsed; for CJK, spaces are not compared at all (the script has none between
 * words). `noSpaces`: Latin compared without spaces too (the share of the error that is spacing).
 */
export function cer(truth: string, read: string, opts: { cjk?: boolean; noSpaces?: boolean } = {}): number {
  const norm = (s: string) => (opts.cjk || opts.noSpaces ? s.replace(/\s+/g, "") : s.replace(/\s+/g, " ").trim());
  const t = norm(truth);
  return Math.min(1, editDistance(t, norm(read)) / Math.max(1, [...t].length));
}
