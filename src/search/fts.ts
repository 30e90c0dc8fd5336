/**
 * User text → a safe FTS5 MATCH expression. Nothing of FTS5's own syntax survives: every term is
 * re-emitted as a double-quoted string literal (so `AND`, `NEAR(`, `col:`, `^`, `-` and stray
 * quotes are just words or nothing), then the units are OR-ed. What is kept on purpose:
 *   - `"two words"` → a phrase (balanced quotes only; an unbalanced quote is ignored),
 *   - `foo*` → a prefix query (at least 2 characters before the star; see `prefix`),
 *   - stemming, which the table's porter tokenizer applies to the literals as it does to the text.
 */

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

export function buildFtsQuery(input: string): FtsQuery | null {
  const units: string[] = [];
  const add = (u: string) => {
    if (!units.includes(u) && units.length < MAX_UNITS) units.push(u);
  };
  const plain = (text: string) => {
    for (const m of text.matchAll(TOKEN)) {
      const word = m[0].replace(/\*$/, "");
      if (m[1] && [...word].length >= 2) add(prefix(word));
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
    if (words.length) add(literal(words.join(" ")));
    rest = rest.slice(close + 1);
  }
  if (units.length === 0) return null;
  return { match: units.join(" OR "), units };
}
