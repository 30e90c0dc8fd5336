/**
 * No request body of this API nests deeper than a few levels. Tens of thousands of levels made
 * the parse, the validation and the 422's `input` echo cost ~0.5 s of event loop each and
 * overflowed the stack (a 500); the depth is measured on the text before any of that runs.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * No body of this API has more than a few hundred values (the largest: a webhook's event list).
 * 50 000 keys took ~80 ms and 100 000 form fields ~200 ms of parsing and validation on the
 * event loop; past these counts a body is refused before any of that runs.
 */
export const MAX_JSON_VALUES = 10_000;
export const MAX_FORM_FIELDS = 1_000;

/**
 * Nesting depth and value count (separators + containers) of JSON, measured as it arrives: fed
 * UTF-8 bytes chunk by chunk (every byte of a multi-byte character is ≥ 0x80, so the ASCII
 * structure reads the same as in the decoded text) or the text's char codes. Strings are skipped
 * with their escapes, across chunk boundaries too. It stops counting once a limit is passed, so a
 * reader can stop reading there: 1 MiB of `[` is refused after its 33rd byte. Malformed text is
 * left to JSON.parse to reject.
 */
export class JsonShapeMeter {
  /** Deepest nesting seen. */
  depth = 0;
  /** Separators and containers seen. */
  values = 0;
  private open = 0;
  private inString = false;
  private escaped = false;

  constructor(
    readonly maxDepth = Infinity,
    readonly maxValues = Infinity,
  ) {}

  /** True once a limit is passed: nothing more is counted. */
  get over(): boolean {
    return this.depth > this.maxDepth || this.values > this.maxValues;
  }

  /** Feeds the next bytes; false once a limit is passed. */
  feed(bytes: Uint8Array): boolean {
    for (let i = 0; i < bytes.length; i++) if (!this.step(bytes[i] as number)) return false;
    return true;
  }

  /** Feeds text (its UTF-16 char codes: the structure is ASCII either way); false once a limit is passed. */
  feedText(text: string): boolean {
    for (let i = 0; i < text.length; i++) if (!this.step(text.charCodeAt(i))) return false;
    return true;
  }

  private step(ch: number): boolean {
    if (this.inString) {
      if (this.escaped) this.escaped = false;
      else if (ch === 0x5c) this.escaped = true;
      else if (ch === 0x22) this.inString = false;
      return true;
    }
    if (ch === 0x22) this.inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++this.values > this.maxValues) return false;
      if (++this.open > this.depth) {
        this.depth = this.open;
        if (this.depth > this.maxDepth) return false;
      }
    } else if (ch === 0x5d || ch === 0x7d) this.open--;
    else if (ch === 0x2c && ++this.values > this.maxValues) return false;
    return true;
  }
}

/** Nesting depth and value count of JSON text, in one pass that stops as soon as a limit is passed. */
export function jsonShape(text: string, maxDepth = Infinity, maxValues = Infinity): { depth: number; values: number } {
  const meter = new JsonShapeMeter(maxDepth, maxValues);
  meter.feedText(text);
  return { depth: meter.depth, values: meter.values };
}

export const jsonDepth = (text: string): number => jsonShape(text).depth;
