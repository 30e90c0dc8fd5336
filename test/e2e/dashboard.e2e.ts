/**
 * End-to-end test of the dashboard in a real browser against the compiled binary (SPEC §10):
 * headless Debian Chromium driven by playwright-core, the binary serving a fresh data dir with the
 * tiny fixture models imported, a loopback webhook receiver. A person's path through the product:
 * the first run from the setup link, sign in, invite a member (one-time password, forced change),
 * create a collection, add a webhook, upload a clip and watch it reach done, posters and player
 * from the address the browser used (the server listens on 0.0.0.0 and is browsed as 127.0.0.2;
 * `--loopback` serves on 127.0.0.1 instead), a truncated clip indexed with its warning and a
 * duplicate upload, the video page, search, play from a moment (currentTime checked), empty-search
 * hints, hide a result, create and revoke an API key, see the webhook's deliveries, the jobs page
 * explaining a failure, retry and delete, the system page, the nodes page (a second node refusing
 * jobs), paging and live status after a reload; /docs rendered by Scalar; no request leaves the
 * server's origin; a member does not see the admin pages; the phone layout does not scroll sideways. Issue 22's steps are in operators.ts.
 * Screenshots of every page (laptop and phone) go to test-artifacts/dashboard/ (gitignored).
 *
 *   bun test/e2e/dashboard.e2e.ts [--binary ./vsearch] [--chromium /usr/bin/chromium] [--keep] [--loopback]
 *
 * Not a vitest file: it needs the built binary and a browser, so .ci/run runs it after the build and
 * counts its tests (the closing line "dashboard e2e: N passed, M failed" and a JSON report).
 * Every wait is bounded.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type Browser, chromium, type Page } from "playwright-core";
import {
  deliveryRows,
  expectThat,
  makeClip,
  makePng,
  makeTruncatedClip,
  parseTime,
  Skip,
  startReceiver,
  Steps,
  WAIT_MS,
  waitForServe,
  watchConsole,
  watchRequests,
} from "./harness.ts";
import * as ops from "./operators.ts";

const REPO = resolve(import.meta.dirname, "..", "..");
const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    binary: { type: "string", default: join(REPO, "vsearch") },
    chromium: { type: "string", default: "/usr/bin/chromium" },
    artifacts: { type: "string", default: join(REPO, "test-artifacts", "dashboard") },
    report: { type: "string" },
    keep: { type: "boolean", default: false },
    /** Serve on 127.0.0.1 and browse it there (default: serve on 0.0.0.0, browse as 127.0.0.2). */
    loopback: { type: "boolean", default: false },
  },
});

// Offline flags (../shared/notes/stack-findings.md): without them Chromium calls Google at start.
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--autoplay-policy=no-user-gesture-required",
  "--mute-audio",
];
const EMAIL = "admin@example.com";
const MEMBER = "member@example.com";
const PASSWORD = "correct horse battery staple";

const steps = new Steps(args.artifacts!);
const { results } = steps;
const step = steps.step.bind(steps);
const shot = steps.shot.bind(steps);
const work = mkdtempSync(join(tmpdir(), "vsearch-e2e-"));
const data = join(work, "data");
// Webhooks may reach the loopback receiver; retries after 1 s and 1 s, so a failing delivery gives
// up within seconds and the log's Retry button can be tried.
// One admin walks every page twice (laptop, then phone) within a minute, and a session counts
// against its user's limits: the per-minute limits are raised so the walk measures pages, not them.
const RAISED_LIMITS = Object.fromEntries(
  [
    "WEBHOOKS",
    "API_KEYS",
    "MOMENT",
    "VIDEOS",
    "JOBS",
    "SEARCH",
    "COLLECTIONS_READ",
    "COLLECTIONS_WRITE",
    "ADMIN",
    "UPLOAD",
  ].map((g) => [`VSEARCH_RATE_LIMIT_${g}`, "1000"]),
);
const env = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: join(work, "home"),
  TMPDIR: join(work, "tmp"),
  LANG: "C.UTF-8",
  VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  VSEARCH_WEBHOOK_RETRY_DELAYS: "1,1",
  ...RAISED_LIMITS,
};

async function run(
  argv: string[],
  timeoutMs = 120_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = Bun.spawn([args.binary!, "--data-dir", data, "--json", ...argv], {
    cwd: work,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0)
    throw new Error(`vsearch ${argv.join(" ")} exited ${code}: ${stderr.trim().split("\n").slice(-2).join(" | ")}`);
  return { code, stdout, stderr };
}

async function signIn(page: Page, base: string, email: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Collections" }).waitFor({ timeout: WAIT_MS });
}

async function main(): Promise<void> {
  rmSync(args.artifacts!, { recursive: true, force: true }); // only this run's screenshots
  mkdirSync(args.artifacts!, { recursive: true });
  mkdirSync(env.HOME);
  mkdirSync(env.TMPDIR);
  expectThat(existsSync(args.binary!), `no binary at ${args.binary} (npm run build)`);
  expectThat(existsSync(args.chromium!), `no Chromium at ${args.chromium} (apt-get install -y chromium)`);

  const ready = await step(
    "setup: tiny models imported (no account: the browser makes it), a 10 s clip and a truncated one made",
    async () => {
      const models = join(REPO, "test", "fixtures", "models");
      await run(
        ["models", "import", join(models, "tiny-random-clip"), "--role", "image-text", "--dtype", "q8"],
        180_000,
      );
      await run(
        ["models", "import", join(models, "tiny-random-whisper"), "--role", "speech", "--dtype", "q8"],
        180_000,
      );
      await makeClip(join(work, "red-cut.mp4"));
      await makeTruncatedClip(join(work, "truncated.mp4"));
      await makePng(join(work, "red.png"));
    },
  );
  if (!ready) return;

  const receiver = startReceiver();
  // Issue 22: served on every address, reached through a second loopback address (as a laptop on
  // the LAN would reach it): every link must follow the address the browser used.
  const host = args.loopback ? "127.0.0.1" : "0.0.0.0";
  const server = Bun.spawn([args.binary!, "--data-dir", data, "--json", "serve", "--host", host, "--port", "0"], {
    cwd: work,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  let browser: Browser | null = null;
  try {
    const served = await waitForServe(server, 60_000);
    const port = new URL(served.url).port;
    const base = args.loopback ? served.url : `http://127.0.0.2:${port}`;
    console.log(`serving on ${host}:${port}, browsing ${base}`);
    browser = await chromium.launch({ executablePath: args.chromium, args: CHROMIUM_ARGS, timeout: 60_000 });
    await phoneAndMember(browser, base, await laptop(browser, base, receiver, served.setup_url));
  } finally {
    await browser?.close().catch(() => {});
    await receiver.stop();
    server.kill("SIGTERM");
    const code = await Promise.race([server.exited, Bun.sleep(15_000).then(() => "timeout" as const)]);
    if (code === "timeout") server.kill("SIGKILL");
  }
}

/** The laptop-sized path; returns the shot label it searched for ("" if none). */
async function laptop(
  browser: Browser,
  base: string,
  receiver: ReturnType<typeof startReceiver>,
  setupUrl: string | null,
): Promise<string> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const outside: string[] = [];
  const cspErrors: string[] = [];
  watchRequests(context, base, outside, cspErrors);
  const page = await context.newPage();
  watchConsole(page, cspErrors);
  page.setDefaultTimeout(WAIT_MS);
  page.on("dialog", (d) => void d.accept());
  const token = async () => (await page.evaluate(() => sessionStorage.getItem("vsearch.session"))) as string;
  const apiGet = async (path: string, bearer: string) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
  const op: ops.OperatorContext = { page, base, work, data, run, token, shot };

  const created = await step(
    "first run: the setup link creates the account and its admin, then is gone",
    () => ops.firstRun(op, setupUrl, EMAIL, PASSWORD),
    page,
  );
  if (!created) return "";

  const signedIn = await step(
    "sign in",
    async () => {
      await page.goto(`${base}/`);
      await shot(page, "laptop-01-sign-in");
      await page.getByLabel("Email").fill(EMAIL);
      await page.getByLabel("Password").fill("wrong password");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("alert").waitFor();
      const err = await page.getByRole("alert").innerText();
      expectThat(/UNAUTHORIZED|invalid/i.test(err), `a wrong password shows the error, got "${err}"`);
      await signIn(page, base, EMAIL);
      expectThat((await token())?.length > 10, "the session token is in sessionStorage");
      // A reload keeps the session (sessionStorage); the first Tab then reaches the skip link.
      await page.reload();
      await page.getByRole("heading", { level: 1, name: "Collections" }).waitFor();
      await page.keyboard.press("Tab");
      const first = await page.evaluate(() => document.activeElement?.textContent?.trim());
      expectThat(first === "Skip to content", `the first Tab reaches the skip link, got "${first}"`);
      const nav = await page.getByRole("navigation", { name: "Main" }).innerText();
      expectThat(nav.includes("API keys") && nav.includes("Webhooks"), `an admin sees the admin pages: ${nav}`);
      return "wrong password refused, then signed in";
    },
    page,
  );
  if (!signedIn) return "";
  await step(
    "users: invite a member with a one-time password; their first sign-in must change it",
    () => ops.inviteMember(op, browser, MEMBER, PASSWORD),
    page,
  );

  await step(
    "create a collection",
    async () => {
      await page.getByRole("link", { name: "Collections", exact: true }).click();
      await page.getByLabel("New collection name").fill("E2E clips");
      await page.getByRole("button", { name: "Create collection" }).click();
      await page.getByRole("button", { name: "E2E clips", exact: true }).waitFor();
      await page.getByRole("heading", { name: "Upload to “E2E clips”" }).waitFor();
      const res = await apiGet("/v1/collections", await token());
      const names = ((await res.json()) as any).data.map((c: any) => c.name);
      expectThat(names.includes("E2E clips"), `the API lists it: ${names}`);
    },
    page,
  );

  let webhookOk = await step(
    "create a webhook (secret shown once)",
    async () => {
      await page.getByRole("link", { name: "Webhooks", exact: true }).click();
      await page.getByLabel("Endpoint URL").fill(receiver.url);
      await page.getByRole("button", { name: "Add webhook" }).click();
      const secret = await page.getByRole("textbox", { name: "Webhook signing secret" }).inputValue();
      expectThat(/^whsec_/.test(secret), `the secret is shown: ${secret.slice(0, 10)}…`);
      await page.getByRole("button", { name: "Copy" }).click();
      await page.getByRole("button", { name: "Copied" }).waitFor();
      await shot(page, "laptop-02-webhook-created");
      await page.getByRole("button", { name: "Done" }).click();
      expectThat(
        (await page.getByRole("textbox", { name: "Webhook signing secret" }).count()) === 0,
        "the secret is gone after Done",
      );
      await page.getByRole("article", { name: `Webhook ${receiver.url}` }).waitFor();
    },
    page,
  );

  let videoName = "red-cut.mp4";
  const uploaded = await step(
    "upload a clip and watch it reach done",
    async () => {
      await page.getByRole("link", { name: "Collections", exact: true }).click();
      await page.getByRole("heading", { name: "Upload to “E2E clips”" }).waitFor();
      // Record what the live region shows while the job runs (bounded).
      await page.locator('input[type="file"]').setInputFiles(join(work, videoName));
      const seen = new Set<string>();
      const deadline = Date.now() + 240_000;
      let final = "";
      while (Date.now() < deadline) {
        const li = page.locator(".uploads li").first();
        if (await li.count()) {
          final = (await li.innerText()).replace(/\s+/g, " ");
          seen.add(
            final
              .replace(/\d+%/, "")
              .replace(/^.*?(uploading|queued|pending|processing|done|failed)/, "$1")
              .trim(),
          );
          if (/done|failed/.test(final)) break;
        }
        await Bun.sleep(150);
      }
      await shot(page, "laptop-03-collections-uploaded");
      expectThat(/done, searchable/.test(final), `the upload reached done: "${final}"`);
      const live = await page.locator(".uploads").getAttribute("aria-live");
      expectThat(live === "polite", "upload progress is an aria-live region");
      return `states shown: ${[...seen].join(" → ")}`;
    },
    page,
  );

  await step(
    "posters and the player load from the address the browser used (0.0.0.0 reached as 127.0.0.2)",
    async () => {
      if (!uploaded) throw new Skip("no video");
      return ops.mediaFromTheAddressUsed(op);
    },
    page,
  );
  await step(
    "a truncated clip is indexed with its partial warning; the same file again is already there",
    () => ops.partialAndDuplicate(op),
    page,
  );
  await page.getByRole("link", { name: "Collections", exact: true }).click();

  let label = "";
  await step(
    "video page: player, stages, shots with labels and transcript",
    async () => {
      if (!uploaded) throw new Skip("no video");
      await page.locator(".video-card", { hasText: videoName }).locator(".video-link").click();
      await page.getByRole("heading", { level: 1, name: videoName }).waitFor();
      await page.locator(".shots li").first().waitFor({ timeout: 30_000 });
      const stages = await page.locator("table.stages tbody tr").allInnerTexts();
      expectThat(
        stages.some((s) => /embeddings\s+ran/.test(s)) && stages.some((s) => /transcript\s+(ran|skipped)/.test(s)),
        `stages listed: ${stages.join(" | ")}`,
      );
      const shots = await page.locator(".shots li").count();
      expectThat(shots >= 2, `both shots listed (found ${shots})`);
      // The second shot's label: a search for it finds a moment that does not start at 0, so playing
      // from it proves the player seeks (0 is where any video starts anyway).
      label = (await page.locator(".shots li").nth(1).locator(".tag").first().innerText()).trim();
      const markers = await page.locator(".timeline .marker").count();
      expectThat(markers === shots, `every shot marked on the timeline (${markers} markers, ${shots} shots)`);
      // Clicking the second shot seeks the player there.
      const target = await page.locator(".shots li").nth(1).locator("button.shot").getAttribute("aria-label");
      const at = parseTime(target!);
      await page.locator(".shots li").nth(1).locator("button.shot").click();
      await page.waitForFunction(
        (t) => Math.abs((document.querySelector(".player video") as HTMLVideoElement).currentTime - t) < 0.6,
        at,
        { timeout: WAIT_MS },
      );
      // Keyboard: the first timeline marker is a focusable button; Enter seeks back to shot 1.
      await page.locator(".timeline .marker").first().focus();
      await page.keyboard.press("Enter");
      await page.waitForFunction(
        () => (document.querySelector(".player video") as HTMLVideoElement).currentTime < 0.6,
        undefined,
        { timeout: WAIT_MS },
      );
      await shot(page, "laptop-04-video");
      return `${stages.length} stages, ${shots} shots, second shot's label "${label}", seeked to ${at}s by click and back to 0 by keyboard`;
    },
    page,
  );

  const hits = await step(
    "search by a shot's label shows moments with thumbnails, scores and text",
    async () => {
      if (!label) throw new Skip("no label from the video page");
      await page.getByRole("link", { name: "Search", exact: true }).click();
      await page.getByLabel("What to find").fill(label);
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await page.locator(".moment").first().waitFor({ timeout: 30_000 });
      const n = await page.locator(".moment").count();
      const score = await page.locator(".moment .score").first().innerText();
      expectThat(/\d+%/.test(score), `a score is shown: ${score}`);
      expectThat((await page.locator(".moment img").count()) > 0, "moments have thumbnails");
      await shot(page, "laptop-05-search");
      return `${n} moments for "${label}"`;
    },
    page,
  );

  await step(
    "play from the moment (currentTime) with every hit on the timeline",
    async () => {
      if (!hits) throw new Skip("no search results");
      const moments = page.locator(".moment");
      const times = (
        await moments.locator("button.thumb").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")))
      ).map((l) => parseTime(l!));
      const index = times.findIndex((t) => t > 1);
      expectThat(index >= 0, `a moment after the start to play from: ${times.join(", ")}`);
      const pick = moments.nth(index);
      const at = times[index];
      // By keyboard: focus the moment's ▶ Play button and press Enter.
      await pick.locator("button.play").focus();
      await page.keyboard.press("Enter");
      await page.locator(".player video").waitFor();
      await page.waitForFunction(
        (t) => {
          const v = document.querySelector(".player video") as HTMLVideoElement;
          return v.readyState >= 1 && Math.abs(v.currentTime - t) < 0.6;
        },
        at,
        { timeout: 20_000 },
      );
      const current = await page.evaluate(
        () => (document.querySelector(".player video") as HTMLVideoElement).currentTime,
      );
      const markers = await page.locator(".result").first().locator(".timeline .marker").count();
      const visible = await page.locator(".result").first().locator(".moment:not(.hidden-seg)").count();
      expectThat(markers === visible, `one marker per hit (${markers} markers, ${visible} moments)`);
      await shot(page, "laptop-06-search-playing");
      // ▶ Play starts playback there (the browser may play muted; time moves on from the moment).
      await page.waitForFunction(
        (t) => {
          const v = document.querySelector(".player video") as HTMLVideoElement;
          return !v.paused && v.currentTime > t;
        },
        at,
        { timeout: WAIT_MS },
      );
      return `asked ${at}s, currentTime ${current.toFixed(2)}s and playing, ${markers} markers`;
    },
    page,
  );

  await step(
    "hide a result; it is gone from the next search and back with “show hidden”",
    async () => {
      if (!hits) throw new Skip("no search results");
      const first = page.locator(".moment").first();
      const at = (await first.locator("button.thumb").getAttribute("aria-label"))!;
      const before = await page.locator(".moment").count();
      await first.getByRole("button", { name: /hide it/ }).click();
      await first.locator(".tag", { hasText: "hidden" }).waitFor();
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await page
        .waitForFunction(
          (n) => document.querySelectorAll(".moment").length !== n || !document.querySelector(".moment"),
          before,
          { timeout: WAIT_MS },
        )
        .catch(() => {});
      const labels = await page
        .locator(".moment button.thumb")
        .evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")));
      expectThat(!labels.includes(at), `the hidden moment (${at}) is not in the next search: ${labels.join(", ")}`);
      await page.getByLabel("Show hidden").check();
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await page.locator(".moment.hidden-seg").first().waitFor();
      const hiddenLabel = await page.locator(".moment.hidden-seg button.thumb").first().getAttribute("aria-label");
      expectThat(hiddenLabel === at, `show hidden brings it back marked hidden: ${hiddenLabel}`);
      await shot(page, "laptop-07-search-hidden");
    },
    page,
  );

  await step("an empty search says what to try (sent as JSON)", () => ops.emptySearchHints(op), page);

  await step(
    "search by a reference image (previewed; multipart with the file)",
    async () => {
      await page.getByLabel("What to find").fill("");
      await page.getByLabel("Show hidden").uncheck();
      await page.getByLabel("Reference image").setInputFiles(join(work, "red.png"));
      await page.waitForFunction(() => {
        const img = document.querySelector(".image-preview img") as HTMLImageElement | null;
        return !!img && img.complete && img.naturalWidth === 128;
      });
      const sent = page.waitForRequest((r) => r.url().endsWith("/v1/search") && r.method() === "POST");
      const answered = page.waitForResponse((r) => r.url().endsWith("/v1/search"));
      answered.catch(() => {}); // awaited below unless the request never went: no unhandled rejection
      await page.getByRole("button", { name: "Search", exact: true }).click();
      const type = (await sent).headers()["content-type"] ?? "";
      expectThat(type.startsWith("multipart/form-data"), `multipart request: ${type}`);
      // No query was typed: without the image the API answers 422 ("query, image or image_url"), and
      // an image it cannot decode is a 422 too, so a 200 means the PNG arrived and was used.
      const res = await answered;
      expectThat(res.status() === 200, `search answered ${res.status()}: ${await res.text().catch(() => "")}`);
      expectThat((await page.getByRole("alert").count()) === 0, "no error shown");
      await page.getByText(/matching video/).waitFor();
      return `${(await res.json()).meta.total} matching video(s) (random weights: the count means nothing)`;
    },
    page,
  );

  await step(
    "create an API key (secret once, copy) and revoke it",
    async () => {
      await page.getByRole("link", { name: "API keys", exact: true }).click();
      await page.getByLabel("Name").fill("e2e key");
      await page.getByRole("button", { name: "Create key" }).click();
      const key = await page.getByRole("textbox", { name: "New API key" }).inputValue();
      expectThat(/^vsk_[0-9A-Za-z]{40}$/.test(key), `the key is shown once: ${key.slice(0, 12)}…`);
      expectThat((await apiGet("/v1/auth/whoami", key)).status === 200, "the new key works");
      await shot(page, "laptop-08-key-created");
      await page.getByRole("button", { name: "Done" }).click();
      const row = page.getByRole("row", { name: /e2e key/ });
      expectThat((await row.innerText()).includes(key.slice(0, 12)), "the row shows the prefix");
      await page.getByRole("button", { name: "Revoke e2e key" }).click();
      await row.getByText(/revoked/).waitFor();
      const after = await apiGet("/v1/auth/whoami", key);
      expectThat(after.status === 401, `the revoked key is refused (${after.status})`);
      await shot(page, "laptop-09-key-revoked");
    },
    page,
  );

  webhookOk =
    (await step(
      "webhook: the job's delivery is in the log; a test ping is delivered",
      async () => {
        if (!webhookOk) throw new Skip("no webhook");
        await page.getByRole("link", { name: "Webhooks", exact: true }).click();
        const card = page.getByRole("article", { name: `Webhook ${receiver.url}` });
        await card.getByRole("button", { name: "Send test" }).click();
        const deadline = Date.now() + 30_000;
        let rows: string[] = [];
        while (Date.now() < deadline) {
          await card.getByRole("button", { name: "Refresh" }).click();
          await Bun.sleep(500);
          rows = (await card.locator("table.deliveries tbody tr").allInnerTexts()).map((r) => r.replace(/\s+/g, " "));
          if (
            rows.some((r) => /job\.completed succeeded/.test(r)) &&
            rows.some((r) => /webhook\.ping succeeded/.test(r))
          )
            break;
        }
        await shot(page, "laptop-10-webhooks");
        expectThat(
          rows.some((r) => /job\.completed succeeded 1 200/.test(r)),
          `job.completed delivered: ${rows.join(" | ")}`,
        );
        expectThat(
          rows.some((r) => /webhook\.ping succeeded/.test(r)),
          `webhook.ping delivered: ${rows.join(" | ")}`,
        );
        const got = receiver.got.find((g) => g.event === "job.completed");
        expectThat(got && /^sha256=[0-9a-f]{64}$/.test(got.signature ?? ""), "the receiver got a signed job.completed");
        return rows.join(" | ");
      },
      page,
    )) && webhookOk;

  await step(
    "webhook: a failed delivery is retried from the log; the active toggle saves",
    async () => {
      if (!webhookOk) throw new Skip("no webhook");
      await page.getByLabel("Endpoint URL").fill(receiver.flakyUrl);
      await page.getByRole("button", { name: "Add webhook" }).click();
      await page.getByRole("button", { name: "Done" }).click();
      const card = page.getByRole("article", { name: `Webhook ${receiver.flakyUrl}` });
      await card.getByRole("button", { name: "Send test" }).click();
      let rows = await deliveryRows(card, /webhook\.ping failed 3 500/);
      expectThat(
        rows.some((r) => /webhook\.ping failed 3 500/.test(r)),
        `the ping failed after 3 attempts: ${rows.join(" | ")}`,
      );
      receiver.state.flaky = false;
      await card.getByRole("button", { name: "Retry" }).click();
      rows = await deliveryRows(card, /webhook\.ping succeeded 4 200/);
      await shot(page, "laptop-11-webhook-retried");
      expectThat(
        rows.some((r) => /webhook\.ping succeeded 4 200/.test(r)),
        `the retry succeeded: ${rows.join(" | ")}`,
      );
      await card.getByLabel("Active").uncheck();
      // Read it back through the API until the PATCH has landed (bounded).
      let active: boolean | undefined;
      for (const deadline = Date.now() + 10_000; active !== false && Date.now() < deadline; await Bun.sleep(200)) {
        const list = (await (await apiGet("/v1/webhooks", await token())).json()) as any;
        active = list.data.find((h: any) => h.url === receiver.flakyUrl)?.is_active;
      }
      expectThat(active === false, "unticking Active deactivates the endpoint");
      return rows.join(" | ");
    },
    page,
  );

  await step(
    "jobs page: a vanished file's failure explained with its fix, retried; the video deleted",
    () => ops.jobsExplainAndDelete(op),
    page,
  );
  await step("system page: models per role and readiness (what doctor says)", () => ops.systemPage(op), page);
  await step("nodes page: this server and a second node that refuses jobs, with why", () => ops.nodesPage(op), page);

  await step(
    "/docs renders the API reference with Scalar, offline",
    async () => {
      await page.goto(`${base}/docs`);
      // Operation summaries from the OpenAPI document, rendered as headings (not raw JSON); Scalar
      // renders sections as they scroll into view, so the first one is what can be waited for.
      await page
        .getByRole("heading", { name: /^Liveness/ })
        .first()
        .waitFor({ timeout: 30_000 });
      const text = await page.locator("body").innerText();
      expectThat(/Collections/.test(text) && /Webhooks/.test(text), "tags are rendered");
      expectThat(!text.includes('"openapi"'), "no raw OpenAPI JSON on the page");
      await page.screenshot({ path: join(args.artifacts!, "laptop-12-docs.png") });
    },
    page,
  );

  await step(`no request left ${base} and no CSP violation on the dashboard`, async () => {
    expectThat(outside.length === 0, `requests to other origins: ${[...new Set(outside)].slice(0, 5).join(", ")}`);
    const dash = cspErrors.filter((e) => !e.includes("/docs"));
    expectThat(dash.length === 0, `CSP errors: ${dash.slice(0, 3).join(" | ")}`);
    const onDocs = cspErrors.length;
    // The watcher sees violations, and the policy holds: an injected inline script does not run.
    await page.goto(`${base}/`);
    await page.getByRole("heading", { level: 1, name: "Collections" }).waitFor();
    const ran = await page.evaluate(() => {
      const el = document.createElement("script");
      el.textContent = "window.__injected = true";
      document.head.append(el);
      return (window as any).__injected === true;
    });
    const deadline = Date.now() + 5_000;
    while (cspErrors.length === onDocs && Date.now() < deadline) await Bun.sleep(100);
    expectThat(
      !ran && cspErrors.length > onDocs,
      `an inline script is refused and reported (ran: ${ran}, reports: ${cspErrors.length - onDocs})`,
    );
    return `${onDocs} CSP console errors on /docs; an injected inline script was refused`;
  });
  await step(
    "26 videos: Load more shows the rest; after a reload their status goes live",
    () => ops.pagingAndLiveAfterReload(op, join(work, "red-cut.mp4")),
    page,
  );
  await context.close();
  return label;
}

async function phoneAndMember(browser: Browser, base: string, label: string): Promise<void> {
  const context = await browser.newContext({
    viewport: { width: 360, height: 740 },
    isMobile: true,
    hasTouch: true,
    deviceScaleFactor: 2,
  });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const noSideScroll = async (what: string) => {
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    expectThat(w <= 361, `${what}: the page is ${w}px wide on a 360px screen`);
  };
  await step(
    "phone (360 px): every page fits the width",
    async () => {
      await page.goto(`${base}/`);
      await shot(page, "phone-01-sign-in");
      await signIn(page, base, EMAIL);
      await page.locator(".cards .card").first().waitFor();
      await noSideScroll("collections");
      await shot(page, "phone-02-collections");
      // The indexed clip (not one of the many, nor a failed one): its page has shots.
      await page.getByRole("button", { name: "E2E clips", exact: true }).click();
      await page.locator(".video-card", { hasText: "red-cut.mp4" }).locator(".video-link").click();
      await page.locator(".shots li").first().waitFor({ timeout: 30_000 });
      await noSideScroll("video");
      await shot(page, "phone-03-video");
      await page.getByRole("link", { name: "Search", exact: true }).click();
      await page.getByLabel("What to find").fill(label || "red");
      await page.getByLabel("Show hidden").check(); // the laptop run hid that moment
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await page.getByText(/matching video/).waitFor();
      if (label) await page.locator(".moment").first().waitFor();
      await noSideScroll("search");
      await shot(page, "phone-04-search");
      for (const [name, file] of [
        ["API keys", "phone-05-keys"],
        ["Webhooks", "phone-06-webhooks"],
        ["Jobs", "phone-07-jobs"],
        ["Users", "phone-08-users"],
        ["System", "phone-09-system"],
        ["Nodes", "phone-10-nodes"],
      ]) {
        await page.getByRole("link", { name, exact: true }).click();
        await page.getByRole("heading", { level: 1, name }).waitFor();
        await page.locator("table tbody tr").first().waitFor(); // the keys, the deliveries, jobs, users, models
        await noSideScroll(name);
        await shot(page, file);
      }
    },
    page,
  );
  await context.close();

  const member = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const mp = await member.newPage();
  mp.setDefaultTimeout(WAIT_MS);
  await step(
    "a member does not see the admin pages (nodes included)",
    async () => {
      await signIn(mp, base, MEMBER);
      const nav = await mp.getByRole("navigation", { name: "Main" }).innerText();
      expectThat(
        !nav.includes("API keys") &&
          !nav.includes("Webhooks") &&
          !nav.includes("Users") &&
          !nav.includes("System") &&
          !nav.includes("Nodes"),
        `member nav: ${nav}`,
      );
      // Sent to an admin page anyway: told it is for admins (the API refuses them too: 403).
      for (const path of ["#/keys", "#/nodes"]) {
        await mp.goto(`${base}/${path}`);
        await mp.getByRole("heading", { level: 1, name: "Admins only" }).waitFor();
        expectThat((await mp.locator("table.nodes").count()) === 0, `no nodes table for a member at ${path}`);
      }
      await shot(mp, "laptop-13-member");
    },
    mp,
  );
  await member.close();
}

try {
  await main();
} catch (e) {
  results.push({
    name: "dashboard e2e ran to the end",
    ok: false,
    ms: 0,
    detail: e instanceof Error ? e.message : String(e),
  });
  console.log(`FAIL dashboard e2e ran to the end — ${e instanceof Error ? e.message : e}`);
} finally {
  if (!args.keep) rmSync(work, { recursive: true, force: true });
}
const failed = results.filter((r) => !r.ok).length;
if (args.report)
  writeFileSync(args.report, JSON.stringify({ passed: results.length - failed, failed, results }, null, 2));
console.log(`screenshots: ${args.artifacts}`);
console.log(`dashboard e2e: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
