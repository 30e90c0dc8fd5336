/**
 * Text for a full-text index that works without spaces between words (issue 28). FTS5's unicode61
 * tokenizer splits on spaces and punctuation only, so "季度预算会议" (quarterly budget meeting) is
 * one token and a query for "预算" (budget) never matches it. Chinese, Japanese and Korean runs are
 * therefore written into the index as overlapping character pairs, plus the run's last character
 * on its own ("季度 度预 预算 算会 会议 议"), as Lucene's CJK bigram filter does: any word of two
 * characters or more is then a phrase of consecutive pairs, and one character is a prefix of a
 * token. Everything else is left exactly as it was, so Latin text tokenizes, stems and ranks as
 * before (`ftsText(s) === s` for text without such characters).
 */

import { CJK_CLASS, hasCjk } from "../core/cjk.ts";

export { CJK_CLASS, hasCjk };

const CJK_RUN = new RegExp(`${CJK_CLASS}+`, "gu");

/** The overlapping pairs of a run, then its last character ("预算会议" → 预算 算会 会议 议); one character stays one. */
export function cjkTokens(run: string): string[] {
  const chars = [...run];
  if (chars.length < 2) return chars;
  const out: string[] = [];
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1]);
  out.push(chars[chars.length - 1]);
  return out;
}

/** What the index holds for `text`: CJK runs as pairs (cjkTokens), set off by spaces; the rest unchanged. */
export function ftsText(text: string): string {
  if (!hasCjk(text)) return text;
  return text
    .replace(CJK_RUN, (run) => ` ${cjkTokens(run).join(" ")} `)
    .replace(/ {2,}/g, " ")
    .trim();
}
