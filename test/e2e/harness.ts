/**
 * The harness of test/e2e/dashboard.e2e.ts: named steps with screenshots, media made with ffmpeg,
 * the server's URL from `serve --json`, a loopback webhook receiver, request and console watchers.
 */
import { join } from "node:path";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import type { BrowserContext, Page } from "playwright-core";

export class Skip extends Error {}

/**
 * The bound of every page wait: generous for a loaded 2-core machine (one sign-in's argon2id
 * alone can take seconds there), finite so that a broken page fails its step instead of hanging.
 */
export const WAIT_MS = 30_000;

export interface StepResult {
  name: string;
  ok: boolean;
  ms: number;
  detail: string;
}

/** Named test steps: each is timed and recorded; a failure keeps its message and the page's screenshot. */
export class Steps {
  readonly results: StepResult[] = [];
  constructor(private artifacts: string) {}

  async step(name: string, fn: () => Promise<string | void>, page?: Page): Promise<boolean> {
    const t0 = performance.now();
    try {
      const detail = (await fn()) ?? "";
      this.results.push({ name, ok: true, ms: performance.now() - t0, detail });
      console.log(`ok   ${name} (${Math.round(performance.now() - t0)} ms)${detail ? ` — ${detail}` : ""}`);
      return true;
    } catch (e) {
      const msg =
        e instanceof Skip
          ? `not run: ${e.message}`
          : e instanceof Error
            ? e.message.split("\n").slice(0, 6).join(" | ")
            : String(e);
      this.results.push({ name, ok: false, ms: performance.now() - t0, detail: msg });
      console.log(`FAIL ${name} — ${msg}`);
      if (page) await this.shot(page, `FAILED-${name.replace(/\W+/g, "-")}`).catch(() => {});
      return false;
    }
  }

  /** A full-page screenshot into the artefacts folder. */
  async shot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: join(this.artifacts, `${name}.png`), fullPage: true, timeout: 15_000 });
  }
}

export function expectThat(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error(what);
}

/** Runs ffmpeg (bounded); throws with its stderr on failure. */
async function ffmpeg(argv: string[]): Promise<void> {
  const proc = Bun.spawn([ffmpegInstaller.path, "-hide_banner", "-v", "error", "-y", ...argv], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const code = await Promise.race([proc.exited, Bun.sleep(60_000).then(() => "timeout")]);
  if (code !== 0) throw new Error(`ffmpeg: ${code} ${await new Response(proc.stderr).text()}`);
}

/** 10 s: 5 s of a moving test pattern, then 5 s of red (a cut), a tone throughout; 2 s GOP. */
export function makeClip(path: string): Promise<void> {
  return ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "testsrc2=s=320x240:r=25:d=5",
    "-f",
    "lavfi",
    "-i",
    "color=c=red:s=320x240:r=25:d=5",
    "-f",
    "lavfi",
    "-i",
    "sine=f=440:d=10",
    "-filter_complex",
    "[0:v][1:v]concat=n=2:v=1:a=0,format=yuv420p[v]",
    "-map",
    "[v]",
    "-map",
    "2:a",
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    "-g",
    "50",
    "-keyint_min",
    "50",
    "-sc_threshold",
    "0",
    "-c:a",
    "aac",
    "-movflags",
    "+faststart",
    path,
  ]);
}

/** A 128×128 red PNG (a reference image for search). */
export function makePng(path: string): Promise<void> {
  return ffmpeg(["-f", "lavfi", "-i", "color=c=red:s=128x128", "-frames:v", "1", path]);
}

/** A loopback receiver for webhook deliveries; `/flaky` answers 500 while `state.flaky` is set. */
export function startReceiver() {
  const got: { path: string; event: string | null; signature: string | null; body: string }[] = [];
  const state = { flaky: true };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      got.push({
        path,
        event: req.headers.get("x-service-event"),
        signature: req.headers.get("x-service-signature"),
        body: await req.text(),
      });
      return path === "/flaky" && state.flaky
        ? new Response("down for maintenance", { status: 500 })
        : new Response("ok");
    },
  });
  const base = `http://127.0.0.1:${server.port}`;
  return { url: `${base}/hook`, flakyUrl: `${base}/flaky`, state, got, stop: () => server.stop(true) };
}

/** Clicks the card's Refresh until a delivery row matches (bounded); returns the rows. */
export async function deliveryRows(
  card: ReturnType<Page["getByRole"]>,
  want: RegExp,
  timeoutMs = 30_000,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let rows: string[] = [];
  while (Date.now() < deadline) {
    await card.getByRole("button", { name: "Refresh" }).click();
    await Bun.sleep(400);
    rows = (await card.locator("table.deliveries tbody tr").allInnerTexts()).map((r) => r.replace(/\s+/g, " "));
    if (rows.some((r) => want.test(r))) break;
  }
  return rows;
}

/** Every request any page makes, to check that none leaves this server. */
export function watchRequests(context: BrowserContext, base: string, outside: string[], cspErrors: string[]): void {
  context.on("request", (req) => {
    const u = req.url();
    if (!u.startsWith(`${base}/`) && !u.startsWith("data:") && !u.startsWith("blob:")) outside.push(u);
  });
  context.on("page", (p) => watchConsole(p, cspErrors));
}

export function watchConsole(page: Page, cspErrors: string[]): void {
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text()))
      cspErrors.push(`${page.url()}: ${m.text().slice(0, 200)}`);
  });
}

/** "… from 0:05.0…" → 5 */
export function parseTime(label: string): number {
  const m = /(\d+):(\d+(?:\.\d+)?)/.exec(label);
  if (!m) throw new Error(`no time in "${label}"`);
  return Number(m[1]) * 60 + Number(m[2]);
}

/** What `serve --json` printed: its URL and, on a data dir without accounts, the one-time setup link. */
export async function waitForServe(
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">,
  timeoutMs: number,
): Promise<{ url: string; setup_url: string | null; also_at: string[] }> {
  const reader = proc.stdout.getReader();
  const deadline = Date.now() + timeoutMs;
  let text = "";
  try {
    while (Date.now() < deadline) {
      const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
      if (next === null || next.done) break;
      text += new TextDecoder().decode(next.value);
      try {
        return JSON.parse(text);
      } catch {
        // not the whole document yet
      }
    }
  } finally {
    reader.releaseLock();
  }
  throw new Error(`serve printed no JSON in ${timeoutMs} ms: ${text.slice(0, 300)}`);
}

/** The first 100 kB of a 10 s clip whose index is up front: a truncated upload (about 3 s decode). */
export async function makeTruncatedClip(path: string): Promise<void> {
  const full = `${path}.full.mp4`;
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "testsrc2=s=320x240:r=25:d=10",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-g",
    "25",
    "-b:v",
    "250k",
    "-maxrate",
    "250k",
    "-bufsize",
    "250k",
    "-pix_fmt",
    "yuv420p",
    "-movflags",
    "+faststart",
    full,
  ]);
  await Bun.write(path, (await Bun.file(full).bytes()).subarray(0, 100_000));
}
