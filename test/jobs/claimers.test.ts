/**
 * Claims that hold under concurrent claimers (issue 24): 8 worker processes over one SQLite file,
 * starting at staggered times while the others already hold tasks, claim 100 tasks of two
 * accounts. Each task is run once and ended once. A node's start frees only what its own
 * previous incarnation held (here: nothing); the old start-up rule (release every lease) handed
 * tasks other processes were running to a second claimer.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { backendEnv } from "../pg/backend.ts";
import { openStores } from "../helpers/stores.ts";
import { tempDir } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { seedIngest } from "./seed.ts";

const dir = tempDir("vsearch-claimers-");
const SCRIPT = join(import.meta.dirname, "claimer-process.ts");
const WORKERS = 8;

test("8 worker processes claim 100 tasks at once: each is claimed once and ended once", async () => {
  const env = await backendEnv(dir); // the pg project: the workers share this dir's database
  const s = openStores(dir);
  try {
    await seedIngest(s, "usr_a", 50);
    await seedIngest(s, "usr_b", 50);
    const procs = Array.from({ length: WORKERS }, (_, i) =>
      Bun.spawn([process.execPath, SCRIPT, dir, `node_w${i}`, String(i * 25)], {
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, ...env, VSEARCH_LOG_LEVEL: "silent" },
      }),
    );
    const ready = () => Array.from({ length: WORKERS }, (_, i) => existsSync(join(dir, `ready-node_w${i}`)));
    expect(await until(async () => ready().every(Boolean), 60_000)).toBe(true);
    writeFileSync(join(dir, "go"), "");
    const outs = await Promise.all(
      procs.map(async (p) => {
        const [out, err, code] = await Promise.all([
          new Response(p.stdout).text(),
          new Response(p.stderr).text(),
          p.exited,
        ]);
        expect(code, err).toBe(0);
        return JSON.parse(out.trim().split("\n").at(-1)!) as { node: string; ran: number[]; ended: number[] };
      }),
    );
    const ran = outs.flatMap((o) => o.ran);
    const ended = outs.flatMap((o) => o.ended);
    expect(ran).toHaveLength(100);
    expect(new Set(ran).size).toBe(100);
    expect(new Set(ended).size).toBe(100);
    expect(ended).toHaveLength(100);
    expect(await s.tasks.list()).toEqual([]);
    // The claims overlapped: more than one process took part.
    expect(outs.filter((o) => o.ran.length > 0).length).toBeGreaterThan(1);
    console.info(`tasks run per worker: ${outs.map((o) => o.ran.length).join(", ")}`);
  } finally {
    s.close();
  }
}, 180_000);
