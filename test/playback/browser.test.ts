/**
 * Every format upload accepts plays video frames in Chromium from its `playback_url` (SPEC §11).
 * A real server (Bun.serve on 127.0.0.1:0 around the app) takes each upload over HTTP; once its
 * rendition is settled, headless Chromium loads `playback_url` in a <video> on a page served by
 * the same origin (so the canvas may read the pixels), seeks, and checks a decoded frame is there
 * and not black. Before renditions, the first five formats failed (MediaError 4 or sound only).
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, type Tenant, type TestApp, startTestApp } from "../helpers/app.ts";
import { scratchDir } from "../helpers/ffmpeg.ts";
import {
  CHROMIUM_FLAGS,
  collection,
  frameIn,
  makeFormat,
  PLAYER_PAGE,
  PROBLEM_FORMATS,
  type ProblemFormat,
  uploadAndIndex,
  waitForRendition,
} from "./helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM)
  console.warn(`[playback browser test] skipped: ${CHROMIUM} is absent (apt-get install -y chromium)`);

describe.skipIf(!HAVE_CHROMIUM)("playback in Chromium", () => {
  let t: TestApp;
  let server: ReturnType<typeof Bun.serve>;
  let origin: string;
  let a: Tenant;
  const videos = new Map<ProblemFormat, any>();

  beforeAll(async () => {
    const media = scratchDir("browser");
    const names = Object.keys(PROBLEM_FORMATS) as ProblemFormat[];
    const files = await Promise.all(names.map((n) => makeFormat(media, n)));
    t = await startTestApp({
      VSEARCH_RATE_LIMIT_VIDEOS: "100000",
      VSEARCH_RATE_LIMIT_JOBS: "100000",
      VSEARCH_RATE_LIMIT_UPLOAD: "100000",
    });
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) =>
        new URL(req.url).pathname === PLAYER_PAGE
          ? new Response("<!doctype html><html><body></body></html>", { headers: { "content-type": "text/html" } })
          : t.app.fetch(req),
    });
    origin = `http://127.0.0.1:${server.port}`;
    t.app.setBaseUrl(origin);
    await t.app.start();
    a = await createTenant(t);
    // Uploads go over the socket, like a client's.
    const http = {
      request: (
        method: string,
        path: string,
        o: { token?: string; json?: unknown; body?: BodyInit; headers?: Record<string, string> } = {},
      ) => {
        const headers: Record<string, string> = { ...o.headers };
        if (o.token) headers.authorization = `Bearer ${o.token}`;
        if (o.json !== undefined) headers["content-type"] = "application/json";
        return fetch(`${origin}${path}`, {
          method,
          headers,
          body: o.json !== undefined ? JSON.stringify(o.json) : o.body,
        });
      },
    };
    const col = await collection(http, a);
    for (const [i, n] of names.entries()) {
      const id = await uploadAndIndex(http, a, col, files[i]!);
      videos.set(n, await waitForRendition(http, a, id));
    }
  }, 300_000);

  afterAll(async () => {
    await server?.stop(true);
    await t?.close();
  });

  test("each format's rendition decision", () => {
    const status = Object.fromEntries([...videos].map(([n, v]) => [n, v.rendition.status]));
    expect(status).toEqual({
      "mpeg4-avi": "ready",
      "mpeg2-ts": "ready",
      "mpeg1-mpg": "ready",
      "h263-3gp": "ready",
      "hevc10-mp4": "ready",
      "h264-mp4": "not_needed",
    });
  });

  test("every format plays video frames from its playback_url", async () => {
    const { chromium } = await import("playwright-core");
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, headless: true });
    try {
      const page = await browser.newPage();
      await page.goto(`${origin}${PLAYER_PAGE}`);
      const results: Record<string, unknown> = {};
      for (const [name, v] of videos) {
        expect(new URL(v.playback_url).origin).toBe(origin);
        results[name] = await page.evaluate(frameIn, v.playback_url);
      }
      for (const [name, v] of videos) {
        const r = results[name] as Awaited<ReturnType<typeof frameIn>>;
        expect(r.error, name).toBeNull();
        expect(r.videoWidth, name).toBe(v.width);
        expect(r.videoHeight, name).toBe(v.height);
        expect(r.currentTime, name).toBeCloseTo(1, 1);
        expect(r.nonBlack, name).toBeGreaterThan((v.width * v.height) / 2); // testsrc2 is bright colour bars
      }
    } finally {
      await browser.close();
    }
  }, 120_000);
});
