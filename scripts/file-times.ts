/**
 * Writes test/file-times.json, the per-file durations test/sequencer.ts starts the longest files
 * first by, from the output of a full run:
 *
 *   bun scripts/file-times.ts <vitest output> [more outputs…]
 *
 * Each input is text with, per test file, either a line of vitest's default reporter
 * (`✓  pg  test/x.test.ts (3 tests) 1234ms`) or a `project path ms` line. A file seen twice keeps
 * its last time; files in test/file-times.json that no input names are kept (a partial run only
 * refreshes what it ran).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const OUT = join(import.meta.dirname, "..", "test", "file-times.json");
const REPORTER_LINE = /^\S+\s+\|?(\w+)\|?\s+(test\/\S+\.test\.ts)\s+\(.*?\)\s+(\d+(?:\.\d+)?)(ms|s)\s*$/;
const PLAIN_LINE = /^(\w+)\s+(test\/\S+\.test\.ts)\s+(\d+)\s*$/;

const inputs = process.argv.slice(2);
if (inputs.length === 0) {
  console.error("usage: bun scripts/file-times.ts <vitest output> [more outputs…]");
  process.exit(2);
}
let seconds: Record<string, number> = {};
try {
  seconds = JSON.parse(readFileSync(OUT, "utf8")).seconds ?? {};
} catch {
  // none yet: start empty
}
let read = 0;
for (const input of inputs) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: strips the reporter's colour codes
  for (const raw of readFileSync(input, "utf8")
    .replace(/\u001b\[[0-9;]*m/g, "")
    .split("\n")) {
    const line = raw.trim();
    const r = REPORTER_LINE.exec(line);
    if (r) {
      seconds[`${r[1]}:${r[2]}`] = Number(r[3]) / (r[4] === "ms" ? 1000 : 1);
      read++;
      continue;
    }
    const p = PLAIN_LINE.exec(line);
    if (p) {
      seconds[`${p[1]}:${p[2]}`] = Number(p[3]) / 1000;
      read++;
    }
  }
}
if (read === 0) {
  console.error("no per-file times found in the input (vitest's default reporter lines, or `project path ms`)");
  process.exit(1);
}
const sorted = Object.fromEntries(
  Object.entries(seconds)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => [k, Math.round(v * 10) / 10]),
);
writeFileSync(
  OUT,
  `${JSON.stringify({ about: "per-file seconds of a full run, for test/sequencer.ts; refresh: bun scripts/file-times.ts <vitest output>", seconds: sorted }, null, 2)}\n`,
);
console.log(`${read} file times read; ${Object.keys(sorted).length} in ${OUT}`);
