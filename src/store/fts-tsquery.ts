/**
 * The full-text expressions search builds (search/fts.ts: FTS5 MATCH text) as PostgreSQL
 * `to_tsquery` input, so one query means the same on both backends.
 *
 * The FTS5 text is vsearch's own, never user syntax: double-quoted literals (`""` inside is a
 * quote), each optionally followed by `*` (prefix), joined with ` OR `, and a prefix pair grouped
 * in parentheses. A literal of several words is a phrase. Here every word becomes a quoted lexeme
 * (`'word'`), a phrase's words are joined with `<->` (next to each other, in order), a prefix's
 * last word gets `:*`, and units are joined with `|`; `to_tsquery('vs_english', …)` then folds,
 * unaccents and stems each word as `to_tsvector` did the text (migration 001's configuration,
 * which keeps stop words as FTS5 does). Characters other than letters, numbers and marks
 * separate words on both sides, so nothing of tsquery's own syntax can come through.
 */

const WORD = /[\p{L}\p{N}\p{M}]+/gu;

/** One literal's words as a tsquery term: a word, or a phrase of them; null when it has none. */
function term(content: string, prefix: boolean): string | null {
  const words = [...content.matchAll(WORD)].map((m) => `'${m[0]}'`);
  if (!words.length) return null;
  if (prefix) words[words.length - 1] += ":*";
  return words.length === 1 ? words[0] : `(${words.join(" <-> ")})`;
}

/**
 * `match` (FTS5, as search/fts.ts and the stores write it) as `to_tsquery` text; null when it
 * holds no word (such a query matches nothing, as FTS5's would).
 */
export function ftsToTsquery(match: string): string | null {
  const terms: string[] = [];
  let i = 0;
  // Bounded: each turn consumes at least one character.
  while (i < match.length) {
    const c = match[i];
    if (c !== '"') {
      i++; // spaces, "OR", parentheses: every unit is an alternative, so only the literals matter
      continue;
    }
    let content = "";
    let j = i + 1;
    while (j < match.length) {
      if (match[j] === '"') {
        if (match[j + 1] === '"') {
          content += '"';
          j += 2;
          continue;
        }
        break;
      }
      content += match[j++];
    }
    const prefix = match[j + 1] === "*";
    const t = term(content, prefix);
    if (t) terms.push(t);
    i = j + 1 + (prefix ? 1 : 0);
  }
  const unique = [...new Set(terms)];
  return unique.length ? unique.join(" | ") : null;
}
