/**
 * User text → a safe FTS5 MATCH expression. Nothing of FTS5's own syntax survives: every term is
 * re-emitted as a double-quoted string literal (so `AND`, `NEAR(`, `col:`, `^`, `-` and stray
 * quotes are just words or nothing), then the units are OR-ed. What is kept on purpose:
 *   - `"two words"` → a phrase (balanced quotes only; an unbalanced quote is ignored),
 *   - `foo*` → a prefix query (at least 2 characters before the star; see `prefix`),
 *   - stemming, which the table's porter tokenizer applies to the literals as it does to the text.
 * With `cjk` (the on-screen text index, whose CJK runs are stored as character pairs: indexing/fts-text.ts),
 * a run of Chinese, Japanese or Korean characters becomes the phrase of its pairs ("预算会议" →
 * "预算 算会 会议"), one such character a prefix ("预"*): a word is found inside a line written
 * without spaces. Input without those characters gives the same expression either way.
 */
import { CJK_CLASS, cjkTokens, hasCjk } from "../indexing/fts-text.ts";

export interface FtsQuery {
  /** The MATCH expression: units joined with OR. */
  match: string;
  /** Each term / phrase / prefix as its own MATCH expression (for per-unit coverage). */
  units: string[];
}

const MAX_UNITS = 16;
const MAX_PHRASE_TOKENS = 12;
// unicode61 keeps letters, numbers and marks in tokens; everything else separates them.
const TOKEN = /[\p{L}\p{N}\p{M}]+(\*)?/gu;
const WORD = /[\p{L}\p{N}\p{M}]+/gu;

const literal = (token: string) => `"${token.replaceAll('"', '""')}"`;

/**
 * A prefix goes through the porter tokenizer like any query word, which turns a final "y" into
 * "i" ("deploy*" would only find "deploying" → "deploi", not "deployment" → "deploy"); the
 * prefix without its "y" is added so both stems match.
 */
const prefix = (word: string) =>
  /[yY]$/.test(word) && [...word].length >= 4
    ? `(${literal(word)}* OR ${literal(word.slice(0, -1))}*)`
    : `${literal(word)}*`;

const CJK_SPLIT = new RegExp(`(${CJK_CLASS}+)`, "u");

/** The index tokens of a word, CJK runs as pairs (without a run's closing single character: a word may sit mid-line). */
function wordTokens(word: string): string[] {
  return word
    .split(CJK_SPLIT)
    .filter(Boolean)
    .flatMap((piece) => {
      if (!hasCjk(piece)) return [piece];
      const t = cjkTokens(piece);
      return t.length > 1 ? t.slice(0, -1) : t;
    });
}

export function buildFtsQuery(input: string, opts: { cjk?: boolean } = {}): FtsQuery | null {
  const units: string[] = [];
  const add = (u: string) => {
    if (!units.includes(u) && units.length < MAX_UNITS) units.push(u);
  };
  const plain = (text: string) => {
    for (const m of text.matchAll(TOKEN)) {
      const word = m[0].replace(/\*$/, "");
      if (opts.cjk && hasCjk(word)) {
        for (const piece of word.split(CJK_SPLIT).filter(Boolean)) {
          const tokens = wordTokens(piece);
          // One CJK character: any pair it starts (or the run's last character itself).
          if (hasCjk(piece) && tokens.length === 1 && [...piece].length === 1) add(`${literal(piece)}*`);
          else add(literal(tokens.join(" ")));
        }
      } else if (m[1] && [...word].length >= 2) add(prefix(word));
      else add(literal(word));
    }
  };
  let rest = input.normalize("NFC");
  for (;;) {
    const open = rest.indexOf('"');
    const close = open < 0 ? -1 : rest.indexOf('"', open + 1);
    if (close < 0) {
      plain(rest.replaceAll('"', " "));
      break;
    }
    plain(rest.slice(0, open));
    const words = [...rest.slice(open + 1, close).matchAll(WORD)].map((m) => m[0]).slice(0, MAX_PHRASE_TOKENS);
    const tokens = opts.cjk ? words.flatMap(wordTokens) : words;
    if (tokens.length) add(literal(tokens.join(" ")));
    rest = rest.slice(close + 1);
  }
  if (units.length === 0) return null;
  return { match: units.join(" OR "), units };
}
