/**
 * Rewrites the generated sections of the docs from the tables they document:
 *   docs/ERRORS.md         ← src/core/error-codes.ts (ERROR_CODES)
 *   docs/CONFIGURATION.md  ← src/config/settings.ts (SETTINGS, the rate limit groups)
 *
 *   bun scripts/gen-docs.ts          rewrite them
 *   bun scripts/gen-docs.ts --check  exit 1, naming the file, when one has drifted
 *
 * Only the text between a section's two markers is generated; the prose around it is kept.
 * test/architecture/generated-docs.test.ts fails when a doc differs from what this writes.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  DEFAULT_RATE_LIMITS,
  RATE_LIMITS_KEY,
  type RateGroup,
  rateLimitEnv,
  SETTINGS,
  type SettingRow,
} from "../src/config/settings.ts";
import { ERROR_CODES } from "../src/core/error-codes.ts";

const ROOT = join(import.meta.dirname, "..");
export const REGENERATE = "bun scripts/gen-docs.ts";

export interface GeneratedSection {
  /** Repository-relative path of the doc. */
  file: string;
  /** The marker name: `<!-- BEGIN GENERATED name -->` … `<!-- END GENERATED name -->`. */
  name: string;
  source: string;
  render(): string;
}

const cell = (s: string) => s.replaceAll("|", "\\|").replaceAll("\n", " ");

/** A default as the docs show it when its row says nothing more. */
function shownDefault(v: unknown): string {
  if (v === undefined || (Array.isArray(v) && v.length === 0)) return "none";
  if (Array.isArray(v)) return `\`${v.join(",")}\``;
  return typeof v === "string" ? `\`${v}\`` : String(v);
}

function settingLine(r: SettingRow<unknown>): string {
  const env = [`\`${r.env}\``, r.flag ? `(flag \`${r.flag}\`)` : "", r.range ?? ""].filter(Boolean).join(" ");
  const key = r.key ? `\`${r.key}\`` : "–";
  return `| ${r.doc} | ${env} | ${key} | ${r.defaultDoc ?? shownDefault(r.default)} |`;
}

export const SECTIONS: GeneratedSection[] = [
  {
    file: "docs/ERRORS.md",
    name: "error-codes",
    source: "src/core/error-codes.ts",
    render: () =>
      [
        "| code | status | meaning |",
        "|---|---|---|",
        ...Object.entries(ERROR_CODES).map(([code, e]) => `| \`${code}\` | ${e.status} | ${cell(e.meaning)} |`),
      ].join("\n"),
  },
  {
    file: "docs/CONFIGURATION.md",
    name: "settings",
    source: "src/config/settings.ts",
    render: () =>
      [
        "| setting | env | config.json | default |",
        "|---|---|---|---|",
        ...Object.values(SETTINGS).map((r) => settingLine(r as SettingRow<unknown>)),
        `| rate limits (per minute) | \`${rateLimitEnv("<group>" as RateGroup)}\` e.g. \`${rateLimitEnv("search")}=60\` | \`${RATE_LIMITS_KEY}: {"search": 60}\` | ${Object.entries(
          DEFAULT_RATE_LIMITS,
        )
          .map(([g, n]) => `${g} ${n}`)
          .join(", ")} |`,
      ].join("\n"),
  },
];

const begin = (s: GeneratedSection) =>
  `<!-- BEGIN GENERATED ${s.name}: from ${s.source} by \`${REGENERATE}\`; edit the source, not this table -->`;
const end = (s: GeneratedSection) => `<!-- END GENERATED ${s.name} -->`;

/** `text` with the section between its markers replaced; throws when the markers are missing. */
export function withSection(text: string, s: GeneratedSection): string {
  const from = text.indexOf(`<!-- BEGIN GENERATED ${s.name}:`);
  const to = text.indexOf(end(s));
  if (from < 0 || to < from) throw new Error(`${s.file}: the markers of the "${s.name}" section are missing`);
  return `${text.slice(0, from)}${begin(s)}\n${s.render()}\n${text.slice(to)}`;
}

/** Each doc as it is and as it should be. */
export function docsState(root = ROOT): { file: string; actual: string; expected: string }[] {
  const files = [...new Set(SECTIONS.map((s) => s.file))];
  return files.map((file) => {
    const actual = readFileSync(join(root, file), "utf8");
    const expected = SECTIONS.filter((s) => s.file === file).reduce(withSection, actual);
    return { file, actual, expected };
  });
}

if (import.meta.main) {
  const check = process.argv.includes("--check");
  let drifted = 0;
  for (const d of docsState()) {
    if (d.actual === d.expected) continue;
    drifted++;
    if (check) console.error(`${d.file} is out of date; run ${REGENERATE}`);
    else {
      writeFileSync(join(ROOT, d.file), d.expected);
      console.log(`wrote ${d.file}`);
    }
  }
  if (check && drifted) process.exit(1);
}
