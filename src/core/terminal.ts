/**
 * Text that reaches a terminal. Control characters in a name could move the cursor, rewrite
 * earlier lines or change colours when an operator lists it (an escape sequence in a collection
 * name is an attack on whoever runs `vsearch … list`); bidi overrides make text read differently
 * from what it is. Names refuse them; CLI output escapes whatever still carries them (older
 * rows, file names, messages).
 */

/** C0 and C1 controls, DEL, line/paragraph separators, bidi embeddings/overrides/isolates. */
// eslint-disable-next-line no-control-regex
export const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS_G = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const CONTROL_BUT_LAYOUT_G = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

// What JSON.stringify leaves raw (C0 inside strings is already escaped; outside them, newlines lay the document out).
const RAW_IN_JSON_G = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escape = (ch: string) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** Every control character as a visible `\uXXXX` (one table cell, one line). */
export function escapeControls(s: string): string {
  return s.replace(CONTROL_CHARS_G, escape);
}

/** Human output: newlines and tabs lay the text out; every other control becomes `\uXXXX`. */
export function escapeForTerminal(s: string): string {
  return s.replace(CONTROL_BUT_LAYOUT_G, escape);
}

/**
 * JSON output: JSON.stringify escapes C0 controls but writes DEL, C1 (e.g. U+009B, a CSI on some
 * terminals) and the bidi controls raw; `\uXXXX` is the same string to a JSON parser.
 */
export function escapeJsonForTerminal(json: string): string {
  return json.replace(RAW_IN_JSON_G, escape);
}
