/**
 * Issue 23: one formatter (Biome, width 120, biome.json) keeps the tree's layout, so a line's width
 * is the formatter's, not a way around the ~450-line rule. A file it would reformat fails here, with
 * the command that fixes it: `node_modules/.bin/biome format --write .`
 */
import { join } from "node:path";
import { describe, expect, test } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const BIOME = join(ROOT, "node_modules", ".bin", "biome");

async function biome(args: string[], cwd = ROOT): Promise<{ code: number; out: string }> {
  const p = Bun.spawn([BIOME, ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out: out + err };
}

describe("formatting", () => {
  test("the tree is as biome formats it (fix: node_modules/.bin/biome format --write .)", async () => {
    const r = await biome(["format", "--max-diagnostics=20", "."]);
    // The check ran over the tree (a wrong root or an empty include list would pass vacuously).
    const checked = /(?:Checked|Formatted) (\d+) files?/.exec(r.out);
    expect(checked, r.out).not.toBeNull();
    expect(Number(checked?.[1])).toBeGreaterThan(300);
    expect(r.code, r.out).toBe(0);
  }, 60_000);

  test("the check fails on a file the formatter would change", async () => {
    // Vacuity guard: the same command on a badly laid-out file inside the included tree exits non-zero.
    const probe = join(ROOT, "test", "architecture", `format-probe-${process.pid}.ts`);
    await Bun.write(probe, "export   const   x =   {a:1,\n\n\n b:2}\n");
    try {
      const r = await biome(["format", probe]);
      expect(r.code).not.toBe(0);
      expect(r.out).toContain("Formatter would have printed");
    } finally {
      await Bun.file(probe).delete();
    }
  }, 60_000);
});
