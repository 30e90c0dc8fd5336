import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";

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

export function scratchDir(name: string): string {
  const d = join(tmpdir(), `vsearch-media-${process.pid}`, name);
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
