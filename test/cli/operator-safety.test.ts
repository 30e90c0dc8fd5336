import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { runCli, runCliJson, startServer } from "../helpers/cli.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";

const root = mkdtempSync(join(tmpdir(), "vsearch-ops-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const tempDir = () => {
  const d = join(root, `d${n++}`);
  mkdirSync(d);
  return d;
};

test("serve on a port already in use refuses with a clear message (another vsearch or any program)", async () => {
  const first = await startServer(tempDir());
  const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("not vsearch") });
  try {
    const port = new URL(first.url).port;
    // Another data dir, the same port: without the check the kernel would split connections between the two.
    const second = await runCli(["--data-dir", tempDir(), "serve", "--port", port], {}, 15_000);
    expect(second.code).toBe(1);
    expect(second.stderr.trim().split("\n")).toEqual([
      `error: port ${port} on 127.0.0.1 is already in use (another vsearch serve or another program); stop it or pick another --port`,
    ]);
    const third = await runCli(["--data-dir", tempDir(), "serve", "--port", String(other.port)], {}, 15_000);
    expect(third.code).toBe(1);
    expect(third.stderr).toContain("already in use");
    // Every request still reaches the first server.
    for (let i = 0; i < 5; i++) expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
  } finally {
    await other.stop(true);
    await first.stop();
  }
}, 60_000);

test("a serve.lock whose pid now belongs to another process is taken over; a live server's lock is not", async () => {
  const d = tempDir();
  const sleeper = Bun.spawn(["sleep", "60"]);
  try {
    const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    // Written by a vsearch that crashed; its pid was then reused (here: a live `sleep`).
    writeFileSync(
      join(d, "serve.lock"),
      JSON.stringify({ pid: sleeper.pid, started_at: "2026-01-01T00:00:00Z", proc_start: "1", boot_id: bootId }),
    );
    const s1 = await startServer(d);
    await s1.stop();
    // A lock from an older version (no start time): a live pid that is not vsearch is not a holder either.
    writeFileSync(join(d, "serve.lock"), JSON.stringify({ pid: sleeper.pid, started_at: "2026-01-01T00:00:00Z" }));
    const s2 = await startServer(d);
    try {
      const lock = JSON.parse(readFileSync(join(d, "serve.lock"), "utf8"));
      expect(lock.pid).toBe(s2.proc.pid);
      expect(lock.proc_start).toMatch(/^\d+$/);
      const again = await runCli(["--data-dir", d, "serve", "--port", "0"], {}, 15_000);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(`another vsearch serve (pid ${s2.proc.pid}`);
    } finally {
      await s2.stop();
    }
  } finally {
    sleeper.kill();
  }
}, 60_000);

test("names with control characters are refused (HTTP 422, CLI exit 1); the CLI never prints raw control bytes", async () => {
  const d = tempDir();
  const evil = "red\u001b[31m\u001b[2Jgone";
  const bad = await runCli(["--data-dir", d, "accounts", "create", "--name", evil]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain("must not contain control characters");
  expect(bad.stderr).not.toContain("\u001b");
  const acct = await runCliJson(["--data-dir", d, "accounts", "create", "--name", "ok"]);
  const badKey = await runCli(["--data-dir", d, "keys", "create", "--account", acct.id, "--name", "a\u202eb"]);
  expect(badKey.code).toBe(1);
  const key = (await runCliJson(["--data-dir", d, "keys", "create", "--account", acct.id, "--name", "k"])).key;

  const server = await startServer(d, { VSEARCH_RATE_LIMIT_JOBS: "100000" });
  try {
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    for (const name of [evil, "line\nbreak", "bell\u0007", "c1\u009b31m", "rtl\u202etxt.exe"]) {
      const res = await fetch(`${server.url}/v1/collections`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name }),
      });
      expect(res.status, JSON.stringify(name)).toBe(422);
      expect(((await res.json()) as any).detail[0]).toMatchObject({
        loc: ["body", "name"],
        type: "value_error",
        msg: expect.stringContaining("control characters"),
      });
    }
    const col = (
      (await (
        await fetch(`${server.url}/v1/collections`, { method: "POST", headers, body: '{"name":"fine"}' })
      ).json()) as any
    ).data;
    const rename = await fetch(`${server.url}/v1/collections/${col.id}`, {
      method: "PATCH",
      headers,
      body: JSON.stringify({ name: evil }),
    });
    expect(rename.status).toBe(422);
    expect(((await (await fetch(`${server.url}/v1/collections/${col.id}`, { headers })).json()) as any).data.name).toBe(
      "fine",
    );
    // A bad job filter is a 422 over HTTP, and a usage error (exit 2) on the CLI.
    expect((await fetch(`${server.url}/v1/jobs?status=weird`, { headers })).status).toBe(422);
    // The OpenAPI document names the new route and the disk-full answer of every write.
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as any;
    expect(Object.keys(doc.paths["/v1/jobs/{job_id}/retry"].post.responses).sort()).toEqual([
      "202",
      "401",
      "403",
      "404",
      "409",
      "413",
      "422",
      "429",
      "500",
      "507",
    ]);
    expect(doc.paths["/v1/upload"].post.responses["507"].description).toContain("INSUFFICIENT_STORAGE");
    expect(doc.paths["/v1/collections"].post.responses["507"]).toBeDefined();
    expect(doc.paths["/v1/collections"].get.responses["507"]).toBeUndefined();
  } finally {
    await server.stop();
  }
  const weird = await runCli(["--data-dir", d, "jobs", "--account", acct.id, "--status", "weird"]);
  expect(weird.code).toBe(2);
  expect(weird.stderr).toContain("must be one of queued, pending, processing, done, failed");

  // File names are not refused (they are the operator's own), but reach the terminal escaped.
  const media = scratchDir("ops");
  const clip = await smallMp4(media);
  const named = join(media, "evil\u202egpj.\u009b2Jmp4");
  copyFileSync(clip, named);
  for (const json of [false, true]) {
    const out = await runCli([
      "--data-dir",
      d,
      ...(json ? ["--json"] : []),
      "ingest",
      named,
      "--account",
      acct.id,
      "--collection",
      "fine",
      "--no-wait",
    ]);
    expect(out.code, out.stderr).toBe(0);
    for (const raw of ["\u202e", "\u009b", "\u001b"]) expect(out.stdout).not.toContain(raw);
    expect(out.stdout).toContain(json ? "\\u202e" : "\\u202e");
    if (json) expect(JSON.parse(out.stdout).files[0].path).toBe(named); // same string to a JSON reader
  }
}, 90_000);
