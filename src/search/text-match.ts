/**
 * Word matching for scene labels and captions (scene mode's text side): query words without
 * stop words, compared after a light English stemmer, so "dogs" finds the label "dog" and
 * "running" the caption "a man runs".
 */
import { LRUCache } from "lru-cache";

const STOP = new Set(
  (
    "a an the of in on at to and or with without for from by is are was were be been this that these those it its as into onto " +
    "over under near some any my your his her their our me we you he she they them there here what which who whom where when how " +
    "photo picture image video frame showing shows show scene clip footage"
  ).split(" "),
);

export function stem(word: string): string {
  let w = word.toLowerCase().replace(/['’]s$/, "");
  if (w.length > 4 && w.endsWith("ies")) return `${w.slice(0, -3)}y`;
  if (w.length > 4 && /(ss|x|z|ch|sh)es$/.test(w)) return w.slice(0, -2);
  if (w.length > 5 && w.endsWith("ing")) {
    w = w.slice(0, -3);
    return /(.)\1$/.test(w) ? w.slice(0, -1) : w;
  }
  if (w.length > 4 && w.endsWith("ed")) {
    w = w.slice(0, -2);
    return /(.)\1$/.test(w) ? w.slice(0, -1) : w;
  }
  if (w.length > 3 && w.endsWith("s") && !w.endsWith("ss")) return w.slice(0, -1);
  return w;
}

const words = (text: string): string[] =>
  text
    .normalize("NFC")
    .toLowerCase()
    .match(/[\p{L}\p{N}]+/gu) ?? [];

/** The query's content words (stemmed, distinct, at most 12). */
export function contentWords(query: string): string[] {
  const out: string[] = [];
  for (const w of words(query)) {
    if (w.length < 2 || STOP.has(w)) continue;
    const s = stem(w);
    if (!out.includes(s)) out.push(s);
    if (out.length === 12) break;
  }
  return out;
}

/**
 * Terms for the store's full-text pre-filter: each content word as written and as stemmed here
 * (prefix-matched there), so every shot `coverage` could count is among the candidates.
 */
export function mentionTerms(query: string): string[] {
  const out = new Set<string>();
  for (const w of words(query)) {
    if (w.length < 2 || STOP.has(w)) continue;
    out.add(w);
    out.add(stem(w));
    if (out.size >= 24) break;
  }
  return [...out];
}

/** The distinct stems of the words of `texts`. */
export function textStems(texts: string[]): string[] {
  return [...new Set(texts.flatMap((t) => words(t).map(stem)))];
}

/** Share of `queryStems` found among the words of `texts`. */
export function coverage(queryStems: string[], texts: string[]): number {
  return coverageOf(queryStems, textStems(texts));
}

/** Share of `queryStems` among `stems` (a text's, from textStems). */
export function coverageOf(queryStems: string[], stems: readonly string[]): number {
  if (!queryStems.length) return 0;
  let found = 0;
  for (const q of queryStems) if (stems.includes(q)) found++;
  return found / queryStems.length;
}

/**
 * A shot's parsed labels and the stems of its labels and caption, kept by shot id (scene mode's text side reads the same
 * few hundred shots query after query, and splitting and stemming them was a tenth of a search's
 * own work). An entry is used only while the shot's `labels` and `caption` are the strings it was
 * made from, so a re-indexed shot (or a reused id) is never answered from an old one; at most
 * `max` entries, the least recently used out first (16 384: above the 10 200 shots of the 100 k
 * frame bench account, whose queries touch all of them in turn; ~0.5 KB an entry).
 */
export interface ShotTerms {
  labels: string[];
  stems: string[];
}

type ShotEntry = ShotTerms & { source: string; caption: string | null };

export class ShotStems {
  private readonly byId: LRUCache<number, ShotEntry>;

  constructor(
    private readonly labelsOf: (s: { labels: string }) => string[],
    max = 16_384,
  ) {
    this.byId = new LRUCache({ max });
  }

  of(shot: { id: number; labels: string; caption: string | null }): ShotTerms {
    const e = this.byId.get(shot.id);
    if (e && e.source === shot.labels && e.caption === shot.caption) return e;
    const labels = this.labelsOf(shot);
    const made = {
      source: shot.labels,
      caption: shot.caption,
      labels,
      stems: textStems([...labels, shot.caption ?? ""]),
    };
    this.byId.set(shot.id, made);
    return made;
  }

  get size(): number {
    return this.byId.size;
  }
}
