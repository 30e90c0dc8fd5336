import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import { removeAfterFile } from "./temp.ts";

export const FFMPEG = ffmpegInstaller.path;

/** Runs ffmpeg (bounded) and returns the output path; throws with stderr on failure. */
export async function ffmpeg(args: string[], out: string, timeoutMs = 60_000): Promise<string> {
  const proc = Bun.spawn([FFMPEG, "-hide_banner", "-loglevel", "error", "-y", ...args, out], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), timeoutMs);
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`ffmpeg failed (${code}): ${err}`);
  return out;
}

/**
 * A scratch folder for a test's generated media, removed after the test file (the files of one
 * process run one after another, so the next one makes it again).
 */
export function scratchDir(name: string): string {
  const root = join(tmpdir(), `vsearch-media-${process.pid}`);
  removeAfterFile(root);
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  return d;
}

/** A short H.264/AAC MP4: test pattern + tone. */
export const smallMp4 = (dir: string, secs = 1) =>
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      `testsrc=size=160x120:rate=10:duration=${secs}`,
      "-f",
      "lavfi",
      "-i",
      `sine=frequency=440:duration=${secs}`,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ],
    join(dir, `small-${secs}s.mp4`),
  );

/**
 * A minute (by default) of 320×240 test pattern with a running timestamp and a tone: a long
 * ingest (frames and speech) and a long OCR task with the tiny models (the queue's tests).
 */
export const longMp4 = (dir: string, secs = 60) =>
  ffmpeg(
    [
      ["-f", "lavfi", "-i", `testsrc=size=320x240:rate=10:duration=${secs}`],
      ["-f", "lavfi", "-i", `sine=frequency=300:duration=${secs}`],
      ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    ].flat(),
    join(dir, `long-${secs}s.mp4`),
  );

/** 2 s test pattern, 2 s solid red, 2 s solid blue (two hard cuts) at 320×240, with a 6 s tone. */
export const cutsMp4 = (dir: string, name = "cuts.mp4") =>
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=320x240:rate=12:duration=2",
      "-f",
      "lavfi",
      "-i",
      "color=c=red:size=320x240:rate=12:duration=2",
      "-f",
      "lavfi",
      "-i",
      "color=c=blue:size=320x240:rate=12:duration=2",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=6",
      "-filter_complex",
      "[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]",
      "-map",
      "[v]",
      "-map",
      "3:a",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "12",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ],
    join(dir, name),
  );

/**
 * The ffmpeg processes this process started (the server under test runs in it) and their summed
 * resident memory, from /proc: how image decoding is seen to stay bounded.
 */
export function ffmpegChildren(): { n: number; rssKb: number } {
  let n = 0;
  let rssKb = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      if (!/^Name:\s*ffmpeg$/m.test(status) || !new RegExp(`^PPid:\\s*${process.pid}$`, "m").test(status)) continue;
      n++;
      rssKb += Number(/^VmRSS:\s*(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      // exited while being read
    }
  }
  return { n, rssKb };
}

export interface ToolProcessInfo {
  pid: number;
  ppid: number;
  name: "ffmpeg" | "ffprobe";
  cmd: string;
  rssKb: number;
}

/**
 * Every ffmpeg/ffprobe on the machine whose command line contains `marker` (a data dir, a file),
 * whoever started it: how a test sees children that outlived their server, and their memory.
 */
export function toolProcesses(marker: string): ToolProcessInfo[] {
  const out: ToolProcessInfo[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const name = /^Name:\s*(\S+)$/m.exec(status)?.[1];
      if (name !== "ffmpeg" && name !== "ffprobe") continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (!cmd.includes(marker)) continue;
      out.push({
        pid: Number(pid),
        ppid: Number(/^PPid:\s*(\d+)/m.exec(status)?.[1] ?? 0),
        name,
        cmd,
        rssKb: Number(/^VmRSS:\s*(\d+)/m.exec(status)?.[1] ?? 0),
      });
    } catch {
      // exited while being read
    }
  }
  return out;
}

/** Samples `toolProcesses(marker)` every `everyMs` until `stop()`: the most at once and the peak summed RSS. */
export function sampleTools(marker: string, everyMs = 20): { stop(): Promise<{ peakN: number; peakRssKb: number }> } {
  let running = true;
  let peakN = 0;
  let peakRssKb = 0;
  const loop = (async () => {
    while (running) {
      const now = toolProcesses(marker);
      peakN = Math.max(peakN, now.length);
      peakRssKb = Math.max(
        peakRssKb,
        now.reduce((n, p) => n + p.rssKb, 0),
      );
      await Bun.sleep(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { peakN, peakRssKb };
    },
  };
}
