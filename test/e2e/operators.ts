/**
 * The steps of test/e2e/dashboard.e2e.ts for issue 22, an operator's path on a real network: the
 * first run from the setup link, people (invite with a one-time password, the forced change),
 * media reached through the address the browser used (the server listens on 0.0.0.0 and is
 * browsed as 127.0.0.2), a truncated clip indexed with its warning, a duplicate upload, the jobs
 * page explaining a failure and retrying it, deleting a video, the system page, empty-search
 * hints, and videos page by page with live status after a reload; and issue 26's nodes page with a
 * second node that refuses jobs. Each function is one step's body; dashboard.e2e.ts names and
 * orders them.
 */
import { rmSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { createLogger } from "../../src/core/logger.ts";
import type { ModelCatalog } from "../../src/models/roles.ts";
import { NodeRegistry } from "../../src/nodes/registry.ts";
import { NodeStore } from "../../src/nodes/store.ts";
import { openStore } from "../../src/store/database.ts";
import { expectThat, Skip, WAIT_MS } from "./harness.ts";

export interface OperatorContext {
  page: Page;
  base: string;
  work: string;
  data: string;
  run: (argv: string[]) => Promise<{ stdout: string }>;
  token: () => Promise<string>;
  shot: (page: Page, name: string) => Promise<void>;
}

/** The setup link (printed for 127.0.0.1) opened at the address the browser uses; creates the account and admin. */
export async function firstRun(c: OperatorContext, setupUrl: string | null, email: string, password: string) {
  expectThat(setupUrl, "serve printed a setup link on a data dir without accounts");
  const link = `${c.base}${new URL(setupUrl).pathname}${new URL(setupUrl).hash}`;
  await c.page.goto(link);
  await c.page.getByRole("heading", { name: "Welcome: create the first account" }).waitFor();
  await c.shot(c.page, "laptop-00-first-run");
  await c.page.getByLabel("Account name").fill("e2e");
  await c.page.getByLabel("Your e-mail").fill(email);
  await c.page.getByLabel("Password (at least 8 characters)").fill(password);
  await c.page.getByLabel("Password again").fill(password);
  await c.page.getByRole("button", { name: "Create account" }).click();
  await c.page.getByRole("heading", { level: 1, name: "Collections" }).waitFor();
  const me = (await (await apiGet(c, "/v1/auth/whoami")).json()) as any;
  expectThat(me.data.role === "admin" && me.data.email === email, `signed in as the new admin: ${JSON.stringify(me)}`);
  // The link is spent: the page says setup is done, and the API refuses it.
  // Sign out finishes (its DELETE, then the hash back to #/) before the link is opened again:
  // otherwise its late `location.hash = "#/"` would replace the setup route.
  await c.page.getByRole("button", { name: "Sign out" }).click();
  await c.page.getByRole("heading", { name: "Sign in" }).waitFor();
  await c.page.waitForFunction(() => location.hash === "#/" || location.hash === "");
  await c.page.goto(link);
  await c.page.getByRole("heading", { name: "Setup is done" }).waitFor();
  const again = await fetch(`${c.base}/v1/setup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      token: link.split("token=")[1],
      account_name: "x",
      email: "x@example.com",
      password: "xxxxxxxx",
    }),
  });
  expectThat(again.status === 404, `a second setup is refused (${again.status})`);
  return "account and admin created from the link; the link then says setup is done (404 over the API)";
}

/** Users page: invite a member (one-time password shown once); the member must choose their own at first sign-in. */
export async function inviteMember(c: OperatorContext, browser: Browser, member: string, password: string) {
  await c.page.getByRole("link", { name: "Users", exact: true }).click();
  await c.page.getByRole("heading", { level: 1, name: "Users" }).waitFor();
  await c.page.getByLabel("E-mail").fill(member);
  await c.page.getByRole("button", { name: "Invite" }).click();
  const otp = await c.page.getByRole("textbox", { name: `One-time password for ${member}` }).inputValue();
  expectThat(/^[0-9A-Za-z]{16}$/.test(otp), `a one-time password is shown: ${otp.length} characters`);
  await c.shot(c.page, "laptop-01b-users-invited");
  await c.page.getByRole("button", { name: "Done" }).click();
  await c.page
    .getByRole("row", { name: new RegExp(member) })
    .getByText("one-time")
    .waitFor();

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const p = await ctx.newPage();
  p.setDefaultTimeout(WAIT_MS);
  try {
    await p.goto(`${c.base}/`);
    await p.getByLabel("Email").fill(member);
    await p.getByLabel("Password").fill(otp);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.getByRole("heading", { name: "Choose your own password" }).waitFor();
    const blocked = await p.evaluate(async () => {
      const r = await fetch("/v1/collections", {
        headers: { authorization: `Bearer ${sessionStorage.getItem("vsearch.session")}` },
      });
      return r.status;
    });
    expectThat(blocked === 403, `a one-time password's session can do nothing else (${blocked})`);
    await p.getByLabel("One-time password").fill(otp);
    await p.getByLabel("New password (at least 8 characters)").fill(password);
    await p.getByLabel("New password again").fill(password);
    await p.getByRole("button", { name: "Change password" }).click();
    await p.getByRole("heading", { level: 1, name: "Collections" }).waitFor();
  } finally {
    await ctx.close();
  }
  await c.page.reload();
  await c.page
    .getByRole("row", { name: new RegExp(member) })
    .getByText("set", { exact: true })
    .waitFor();
  return "invited, signed in with the one-time password, forced to choose a new one, then in";
}

/** The server listens on 0.0.0.0 and the browser reached it as 127.0.0.2: posters and the player load from there. */
export async function mediaFromTheAddressUsed(c: OperatorContext) {
  await c.page.getByRole("link", { name: "Collections", exact: true }).click();
  const poster = c.page.locator(".video-card img.poster").first();
  await poster.waitFor();
  await c.page.waitForFunction(() => {
    const imgs = Array.from(document.querySelectorAll<HTMLImageElement>(".video-card img.poster, .thumbs img"));
    return imgs.length > 0 && imgs.every((i) => i.complete && i.naturalWidth > 0);
  });
  const srcs = await c.page.$$eval(".video-card img.poster", (els) =>
    els.map((e) => (e as HTMLImageElement).currentSrc),
  );
  expectThat(
    srcs.every((s) => s.startsWith(`${c.base}/media/`)),
    `posters come from ${c.base}: ${srcs[0]}`,
  );
  // What the API hands out follows the Host the request used, not the address it listens on.
  const list = (await (await apiGet(c, "/v1/videos")).json()) as any;
  const url: string = list.data[0].thumbnail_url;
  expectThat(url.startsWith(`${c.base}/media/`), `the API's link is on ${c.base}: ${url.slice(0, 60)}`);
  await c.page.locator(".video-link").first().click();
  await c.page.waitForFunction(() => {
    const v = document.querySelector(".player video") as HTMLVideoElement | null;
    return !!v && v.readyState >= 1;
  });
  const src = await c.page.$eval(".player video", (v) => (v as HTMLVideoElement).currentSrc);
  expectThat(src.startsWith(`${c.base}/media/`), `the player plays from ${c.base}: ${src.slice(0, 60)}`);
  return `${srcs.length} poster(s) and the player loaded from ${c.base}`;
}

/** A truncated clip is indexed as far as it decodes, with the warning; the same file again is "already there". */
export async function partialAndDuplicate(c: OperatorContext) {
  await c.page.getByRole("link", { name: "Collections", exact: true }).click();
  await c.page.getByRole("heading", { name: "Upload to “E2E clips”" }).waitFor();
  const file = join(c.work, "truncated.mp4");
  await c.page.locator('input[type="file"]').setInputFiles(file);
  const row = c.page.locator(".uploads li").first();
  await row.filter({ hasText: /searchable|failed/ }).waitFor({ timeout: 240_000 });
  const text = (await row.innerText()).replace(/\s+/g, " ");
  expectThat(/done, searchable/.test(text), `the truncated clip was indexed: ${text}`);
  const card = c.page.locator(".video-card", { hasText: "truncated.mp4" });
  await card.locator(".warning").waitFor({ timeout: 20_000 });
  const warning = await card.locator(".warning").innerText();
  expectThat(/partial: decoded 0:00–0:0\d of 0:10/.test(warning), `the card warns: ${warning}`);
  await c.page.locator('input[type="file"]').setInputFiles(file);
  await c.page
    .locator(".uploads li")
    .first()
    .filter({ hasText: /already in this collection/ })
    .waitFor({ timeout: 60_000 });
  const cards = await c.page.locator(".video-card", { hasText: "truncated.mp4" }).count();
  expectThat(cards === 1, `one card for the two uploads of the same file (${cards})`);
  await c.shot(c.page, "laptop-03b-partial-and-duplicate");
  return `${warning.trim()}; the second upload answered "already in this collection"`;
}

/** A video whose file vanished from disk: the jobs page says what it means and what to do; Retry; then Delete. */
export async function jobsExplainAndDelete(c: OperatorContext) {
  const list = (await (await apiGet(c, "/v1/videos?per_page=100")).json()) as any;
  const victim = list.data.find((v: any) => v.filename === "truncated.mp4");
  if (!victim) throw new Skip("no truncated.mp4 video");
  const dir = join(c.data, "videos", victim.id);
  for (const f of readdirSync(dir)) if (f.startsWith("source")) rmSync(join(dir, f));
  await c.run(["reindex", "--all", "--no-wait"]);
  // Its new job fails at the first stage (the file is gone): wait for that through the API, since
  // the page lists failed jobs when it loads or on Refresh, and refreshes only while one runs.
  let failed: any = null;
  for (const deadline = Date.now() + 180_000; !failed && Date.now() < deadline; await Bun.sleep(500)) {
    const newest = ((await (await apiGet(c, `/v1/jobs?video_id=${victim.id}`)).json()) as any).data[0];
    if (newest?.status === "failed") failed = newest;
  }
  expectThat(failed, "the re-index of the video whose file vanished failed within 180 s");
  await c.page.getByRole("link", { name: "Jobs", exact: true }).click();
  await c.page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
  await c.page.getByLabel("Show").selectOption("failed");
  await c.page.getByRole("button", { name: "Refresh" }).click();
  const error = c.page.locator(".job-error").first();
  await error.waitFor();
  const said = (await error.innerText()).replace(/\s+/g, " ");
  expectThat(/What to do:/.test(said), `the failure is explained with a fix: ${said}`);
  await c.shot(c.page, "laptop-13-jobs-failed");
  const jobsBefore = { data: [failed] };
  await c.page
    .locator("tr", { hasText: "truncated.mp4" })
    .getByRole("button", { name: /^Retry/ })
    .first()
    .click();
  let attempts = 0;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(300)) {
    const j = ((await (await apiGet(c, `/v1/jobs/${jobsBefore.data[0].id}`)).json()) as any).data;
    if (j.status !== "failed" || j.updated_at !== jobsBefore.data[0].updated_at) {
      attempts++;
      break;
    }
  }
  expectThat(attempts === 1, "Retry queued the job again");
  // The way out: delete the video (the confirmation is accepted by the page's dialog handler).
  await c.page.goto(`${c.base}/#/videos/${victim.id}`);
  await c.page.getByRole("button", { name: "Delete video" }).click();
  await c.page.getByRole("heading", { level: 1, name: "Collections" }).waitFor();
  const gone = await apiGet(c, `/v1/videos/${victim.id}`);
  expectThat(gone.status === 404, `the deleted video is gone (${gone.status})`);
  return said.slice(0, 160);
}

/** The system page: models per role and readiness (what doctor says). */
export async function systemPage(c: OperatorContext) {
  await c.page.getByRole("link", { name: "System", exact: true }).click();
  await c.page.getByRole("heading", { level: 1, name: "System" }).waitFor();
  const models = c.page.locator("table.models tbody tr");
  await models.first().waitFor();
  const rows = (await models.allInnerTexts()).map((r) => r.replace(/\s+/g, " "));
  expectThat(
    rows.some((r) => /tiny-random-clip/.test(r)) && rows.some((r) => /tiny-random-whisper/.test(r)),
    rows.join(" | "),
  );
  await c.page.getByRole("heading", { name: /^Readiness: ready$/ }).waitFor();
  await c.shot(c.page, "laptop-14-system");
  return rows.join(" | ");
}

/**
 * The nodes page (issue 26): the server itself (the embedded `all` node registers at start) and a
 * second node — a worker registered over the server's database by the real node registry, run
 * here, with another CLIP (and this source tree's version, not the binary's): the registry's own
 * check refuses it, and the page shows both rows and the refusal as the registry wrote it.
 */
export async function nodesPage(c: OperatorContext) {
  const store = openStore(join(c.data, "vsearch.db"));
  const models: ModelCatalog = {
    active: (role) =>
      role === "image-text" ? { name: "other", dir: "/nonexistent", dtype: "fp32", modelId: "another-clip@1" } : null,
  };
  const id = "node_e2e00000000000w1";
  const worker = new NodeRegistry(
    new NodeStore(store.exec),
    models,
    { id, role: "worker", kinds: ["ingest", "ocr"], concurrency: 2 },
    { device: async () => "cuda", logger: createLogger("silent") },
  );
  try {
    await worker.start();
    const refused = worker.refused;
    expectThat(refused && /differs from the cluster's .*on all node/.test(refused), `the worker refuses: ${refused}`);
    await c.page.getByRole("link", { name: "Nodes", exact: true }).click();
    await c.page.getByRole("heading", { level: 1, name: "Nodes" }).waitFor();
    const row = c.page.locator(`table.nodes tbody tr[data-node="${id}"]`);
    await row.waitFor();
    const rows = (await c.page.locator("table.nodes tbody tr").allInnerTexts()).map((r) => r.replace(/\s+/g, " "));
    expectThat(rows.length === 2, `two nodes: ${rows.join(" | ")}`);
    const server = rows.find((r) => !r.includes(id)) ?? "";
    expectThat(
      /\ball\b/.test(server) && /running/.test(server) && /tiny-random-clip/.test(server) && !/refusing/.test(server),
      `the server's own row: ${server}`,
    );
    const mine = (await row.innerText()).replace(/\s+/g, " ");
    for (const want of ["worker", "running", "refusing jobs", "cuda", "another-clip@1", "ingest, ocr × 2", "s ago"])
      expectThat(mine.includes(want), `the worker's row has "${want}": ${mine}`);
    const said = (await c.page.locator(`[data-refused="${id}"]`).innerText()).replace(/\s+/g, " ");
    expectThat(said.includes(refused!), `the refusal is shown: ${said}`);
    await c.shot(c.page, "laptop-15-nodes");
    return `${rows.length} nodes; ${said.slice(0, 140)}`;
  } finally {
    await worker.stop();
    store.close();
  }
}

/** An empty search says what to try; a text search goes as JSON. */
export async function emptySearchHints(c: OperatorContext) {
  await c.page.getByRole("link", { name: "Search", exact: true }).click();
  await c.page.getByLabel("What to find").fill("qqqq zzzz");
  await c.page.getByLabel("Frames").uncheck();
  await c.page.getByLabel("Scenes").uncheck();
  await c.page.getByLabel("Speech").uncheck();
  try {
    const sent = c.page.waitForRequest((r) => r.url().endsWith("/v1/search") && r.method() === "POST");
    await c.page.getByRole("button", { name: "Search", exact: true }).click();
    const type = (await sent).headers()["content-type"] ?? "";
    expectThat(type.startsWith("application/json"), `a text search is sent as JSON: ${type}`);
    await c.page.locator(".hints li").first().waitFor();
    const hints = await c.page.locator(".hints li").allInnerTexts();
    // Videos are indexed, so the hints are about the search: the score, the other modes.
    expectThat(
      hints.some((h) => /minimum score/.test(h)) && hints.some((h) => /Search more modes/.test(h)),
      `hints: ${hints.join(" | ")}`,
    );
    await c.shot(c.page, "laptop-07b-search-hints");
    return hints.join(" | ");
  } finally {
    // The next steps search with every mode again, whatever happened here.
    for (const m of ["Frames", "Scenes", "Speech"]) await c.page.getByLabel(m).check();
  }
}

/** 26 videos in a new collection: 24 shown, Load more shows the rest; after a reload the cards still go live. */
export async function pagingAndLiveAfterReload(c: OperatorContext, clip: string) {
  const auth = { authorization: `Bearer ${await c.token()}` };
  const col = await fetch(`${c.base}/v1/collections`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ name: "Many" }),
  });
  const colId = ((await col.json()) as any).data.id;
  const bytes = await Bun.file(clip).bytes();
  for (let i = 0; i < 26; i++) {
    // Distinct files (trailing bytes after the MP4 differ), so none is a duplicate of another.
    const fd = new FormData();
    fd.append("collection_id", colId);
    fd.append("file", new Blob([bytes, new Uint8Array(i + 1).fill(i)]), `many-${String(i).padStart(2, "0")}.mp4`);
    const r = await fetch(`${c.base}/v1/upload`, { method: "POST", headers: auth, body: fd });
    expectThat(r.status === 202, `upload ${i} answered ${r.status}`);
  }
  // A fresh load: a hash-only goto on the same page would keep the collection list from before.
  await c.page.goto(`${c.base}/#/`);
  await c.page.reload();
  await c.page.getByRole("button", { name: "Many", exact: true }).click();
  await c.page.getByText("Showing 24 of 26 videos").waitFor();
  await c.page.getByRole("button", { name: "Load more" }).click();
  await c.page.waitForFunction(() => document.querySelectorAll(".video-card").length === 26);
  // A reload, then the status of the cards follows the server (no upload rows on this page).
  await c.page.reload();
  await c.page.getByRole("button", { name: "Many", exact: true }).click();
  await c.page.locator(".video-card").first().waitFor();
  const before = await c.page.locator(".video-card .status", { hasText: "searchable" }).count();
  await c.page.waitForFunction(
    (n) =>
      document.querySelectorAll(".video-card .status").length > 0 &&
      Array.from(document.querySelectorAll(".video-card .status")).filter((e) => e.textContent === "searchable")
        .length > n,
    before,
    { timeout: 180_000 },
  );
  const after = await c.page.locator(".video-card .status", { hasText: "searchable" }).count();
  await c.shot(c.page, "laptop-15-paging-live");
  return `24 of 26, then 26 after Load more; after a reload ${before} → ${after} searchable without touching the page`;
}

function apiGet(c: OperatorContext, path: string) {
  return c.token().then((t) => fetch(`${c.base}${path}`, { headers: { authorization: `Bearer ${t}` } }));
}
