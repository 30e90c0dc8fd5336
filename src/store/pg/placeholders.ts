/**
 * `?` / `?N` placeholders (SQLite's, the stores' one spelling) → PostgreSQL's `$N`, skipping
 * string literals ('…', E'…'), quoted identifiers, dollar-quoted bodies and comments. Numbering
 * follows SQLite: `?N` is parameter N; a bare `?` is one more than the largest number used so
 * far. Rewritten once per text (the stores' texts are constants; a bounded cache holds them).
 */
import { StoreError } from "../errors.ts";

export interface Rewritten {
  /** The text with `$N` placeholders. */
  readonly text: string;
  /** How many parameters it takes (the largest N). */
  readonly count: number;
}

const CACHE_LIMIT = 4096;
const cache = new Map<string, Rewritten>();

export function rewritePlaceholders(sql: string): Rewritten {
  const hit = cache.get(sql);
  if (hit) return hit;
  const out = rewrite(sql);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(sql, out);
  return out;
}

const isDigit = (c: string) => c >= "0" && c <= "9";
const isIdentStart = (c: string) => /[A-Za-z_\u0080-\uffff]/.test(c);
const isIdent = (c: string) => /[A-Za-z0-9_\u0080-\uffff]/.test(c);

function rewrite(sql: string): Rewritten {
  let out = "";
  let max = 0;
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i];
    const next = sql[i + 1];
    if (c === "'") {
      // E'…' (backslash escapes) when the previous character is a lone E/e.
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]) && (i < 2 || !isIdent(sql[i - 2]));
      const end = quotedEnd(sql, i, "'", escapes);
      out += sql.slice(i, end);
      i = end;
    } else if (c === '"') {
      const end = quotedEnd(sql, i, '"', false);
      out += sql.slice(i, end);
      i = end;
    } else if (c === "-" && next === "-") {
      const nl = sql.indexOf("\n", i);
      const end = nl === -1 ? n : nl;
      out += sql.slice(i, end);
      i = end;
    } else if (c === "/" && next === "*") {
      const end = blockCommentEnd(sql, i);
      out += sql.slice(i, end);
      i = end;
    } else if (c === "$" && next !== undefined && (next === "$" || isIdentStart(next)) && !isIdent(sql[i - 1] ?? " ")) {
      const end = dollarQuotedEnd(sql, i);
      out += sql.slice(i, end);
      i = end;
    } else if (c === "?") {
      if (next === "|" || next === "&") {
        throw new StoreError(
          "misuse",
          `PostgreSQL's jsonb operator ?${next} cannot appear in store SQL (it reads as a placeholder): use jsonb_exists_any / jsonb_exists_all`,
        );
      }
      let j = i + 1;
      while (j < n && isDigit(sql[j])) j++;
      let index: number;
      if (j > i + 1) {
        index = Number(sql.slice(i + 1, j));
        if (index < 1)
          throw new StoreError("misuse", `placeholder ?${index} in store SQL: numbered placeholders start at ?1`);
      } else {
        index = max + 1;
      }
      if (index > max) max = index;
      out += `$${index}`;
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return { text: out, count: max };
}

/** Index just past the closing quote of a literal or identifier opened at `start` (doubled quotes escape). */
function quotedEnd(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslashEscapes && c === "\\") {
      i += 2;
    } else if (c === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else {
      i++;
    }
  }
  return sql.length;
}

/** Block comments nest in PostgreSQL. */
function blockCommentEnd(sql: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < sql.length) {
    if (sql[i] === "/" && sql[i + 1] === "*") {
      depth++;
      i += 2;
    } else if (sql[i] === "*" && sql[i + 1] === "/") {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else {
      i++;
    }
  }
  return sql.length;
}

/** `$tag$ … $tag$`; a `$` that opens no valid tag is copied as itself. */
function dollarQuotedEnd(sql: string, start: number): number {
  let j = start + 1;
  while (j < sql.length && sql[j] !== "$" && isIdent(sql[j])) j++;
  if (sql[j] !== "$") return start + 1;
  const tag = sql.slice(start, j + 1);
  const close = sql.indexOf(tag, j + 1);
  return close === -1 ? sql.length : close + tag.length;
}
