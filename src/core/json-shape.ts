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
 * Nesting depth and value count (separators + containers) of JSON text, in one pass over char
 * codes, strings skipped with their escapes; it stops as soon as a limit is passed. Malformed
 * text is left to JSON.parse to reject.
 */
export function jsonShape(text: string, maxDepth = Infinity, maxValues = Infinity): { depth: number; values: number } {
  let depth = 0;
  let max = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped char
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++values > maxValues) break;
      if (++depth > max) {
        max = depth;
        if (max > maxDepth) break;
      }
    } else if (ch === 0x5d || ch === 0x7d) depth--;
    else if (ch === 0x2c && ++values > maxValues) break;
  }
  return { depth: max, values };
}

export const jsonDepth = (text: string): number => jsonShape(text).depth;
