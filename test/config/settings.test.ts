/**
 * Issue 23: every setting is a row of src/config/settings.ts, and loadConfig reads each row the
 * same way: flag > env > config.json > default, each value checked against the row whichever
 * source it came from, the error naming that source. Run over every row, so a new row is covered
 * the day it is added (its values are drawn from the pools below; a rule they cannot satisfy
 * fails here and says which row needs a candidate).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ConfigError, fileSchema, loadConfig } from "../../src/config/config.ts";
import { RATE_GROUPS, rateLimitEnv, SETTINGS, type SettingRow } from "../../src/config/settings.ts";
import { tempDirs } from "../helpers/temp.ts";

const dirs = tempDirs("vsearch-settings-");
const rows = Object.entries(SETTINGS) as [keyof typeof SETTINGS, SettingRow<unknown>][];

/** Candidate values (as the environment writes them) a row's rule may accept. */
const POOL: Record<SettingRow<unknown>["envKind"], string[]> = {
  number: ["1", "2", "3", "17", "30", "1000", "2000", "0.5", "2073600", "8294400"],
  string: [
    "debug",
    "warn",
    "cpu",
    "cuda",
    "off",
    "auto",
    "exact",
    "skip",
    "ppocr",
    "tesseract",
    "/srv/a",
    "/srv/b",
    "25%",
    "40%",
    "memory",
    "pgvector",
    "postgres://db-a.example/vsearch",
    "postgresql://db-b.example/vsearch",
    "https://s3.a.example",
    "http://minio.b.example:9000",
    "media-a",
    "media-b",
    "path",
    "virtual-hosted",
  ],
  list: ["10.0.0.0/8", "192.168.0.0/16", "https://a.example", "https://b.example"],
  "number-list": ["1,2", "5,10,20"],
};
const parsedFromEnv = (r: SettingRow<unknown>, text: string): unknown =>
  r.envKind === "number"
    ? Number(text)
    : r.envKind === "list"
      ? [text]
      : r.envKind === "number-list"
        ? text.split(",").map(Number)
        : text;
const accepts = (r: SettingRow<unknown>, v: unknown) => r.schema.safeParse(v).success && !r.check?.(v);

/**
 * [file value, env text, env value]: the file's differs from the default, the env's from the
 * file's, so each step of the precedence shows in the result.
 */
function samples(r: SettingRow<unknown>): [unknown, string, unknown] | undefined {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const ok = POOL[r.envKind].map((t): [string, unknown] => [t, parsedFromEnv(r, t)]).filter(([, v]) => accepts(r, v));
  const file = ok.find(([, v]) => !same(v, r.default));
  const env = file && ok.find(([, v]) => !same(v, file[1]));
  return file && env ? [file[1], env[0], env[1]] : undefined;
}
const finished = (r: SettingRow<unknown>, v: unknown, dataDir: string) => (r.finish ? r.finish(v, { dataDir }) : v);

describe("the settings table", () => {
  test("names are unique, env names are VSEARCH_*, and every row has values the pools can give it", () => {
    const envs = rows.map(([, r]) => r.env);
    const keys = rows.flatMap(([, r]) => (r.key ? [r.key] : []));
    expect(new Set(envs).size).toBe(envs.length);
    expect(new Set(keys).size).toBe(keys.length);
    for (const e of envs) expect(e).toMatch(/^VSEARCH_[A-Z0-9_]+$/);
    for (const [name, r] of rows) expect(samples(r), `${name}: add a candidate to POOL`).toBeDefined();
    // Vacuity guard: the table is the whole configuration, not a few rows.
    expect(rows.length).toBeGreaterThan(30);
  });

  test("each row: the default, then config.json, then env, then a flag wins", () => {
    const dataDir = dirs.make();
    const base = loadConfig({ dataDir }, {});
    for (const [name, r] of rows) {
      if (name === "dataDir") continue;
      const [fileValue, envText, envValue] = samples(r)!;
      expect(base[name], `${name} default`).toEqual(
        r.default === undefined ? undefined : finished(r, r.default, dataDir),
      );
      expect(r.key, `${name}: every setting but the data dir is settable in config.json`).not.toBeNull();
      writeFileSync(join(dataDir, "config.json"), JSON.stringify({ [r.key!]: fileValue }));
      expect(loadConfig({ dataDir }, {})[name], `${name} from config.json`).toEqual(finished(r, fileValue, dataDir));
      expect(loadConfig({ dataDir }, { [r.env]: envText })[name], `${name} from ${r.env}`).toEqual(
        finished(r, envValue, dataDir),
      );
      if (r.flag) {
        // The flags loadConfig takes (ConfigFlags); a row's flag is named after its field there.
        expect(
          loadConfig({ dataDir, [name]: fileValue }, { [r.env]: envText })[name],
          `${name} from ${r.flag}`,
        ).toEqual(fileValue);
      }
      writeFileSync(join(dataDir, "config.json"), "{}");
    }
  });

  test("a value breaking its row's rule stops the start, naming where it came from", () => {
    const dataDir = dirs.make();
    expect(() => loadConfig({ dataDir }, { VSEARCH_SPEECH_MAX_TOKENS: "9" })).toThrow(
      new ConfigError(
        "VSEARCH_SPEECH_MAX_TOKENS must be an integer in 16..440, got 9 (config.json: speech_max_tokens)",
      ),
    );
    expect(() => loadConfig({ dataDir, port: 70_000 }, {})).toThrow("--port must be an integer in 0..65535, got 70000");
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ device: "tpu" }));
    expect(() => loadConfig({ dataDir }, {})).toThrow(
      `${join(dataDir, "config.json")}: device must be auto, cpu, cuda or webgpu, got "tpu"`,
    );
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ trusted_proxies: ["proxy.example"] }));
    expect(() => loadConfig({ dataDir }, {})).toThrow(/config\.json: trusted_proxies: invalid network "proxy.example"/);
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ frame_interval: 2 }));
    expect(() => loadConfig({ dataDir }, {})).toThrow(/Unrecognized key.*frame_interval/);
  });

  test("the config.json schema is the rows' keys and rate_limits, nothing else", () => {
    const keys = Object.keys(fileSchema.shape).sort();
    expect(keys).toEqual([...rows.flatMap(([, r]) => (r.key ? [r.key] : [])), "rate_limits"].sort());
  });

  test("rate limits: one per group, env over config.json over the default", () => {
    const dataDir = dirs.make();
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ rate_limits: { search: 5, upload: 6 } }));
    const c = loadConfig({ dataDir }, { [rateLimitEnv("search")]: "7" });
    expect([c.rateLimits.search, c.rateLimits.upload, c.rateLimits.jobs]).toEqual([7, 6, 60]);
    expect(Object.keys(c.rateLimits).sort()).toEqual([...RATE_GROUPS].sort());
    expect(() => loadConfig({ dataDir }, { [rateLimitEnv("jobs")]: "0" })).toThrow(/VSEARCH_RATE_LIMIT_JOBS must be/);
  });
});
