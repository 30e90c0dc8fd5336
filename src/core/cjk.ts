/**
 * Scripts written without spaces between words: Han, Hiragana, Katakana, Hangul, and the katakana
 * length mark (ー, full and half width), which Unicode files under no script but is part of the
 * word ("タワー"). The OCR full-text index pairs their characters (indexing/fts-text.ts); the
 * PP-OCR decoder never puts a space between two of them (ocr/ppocr/recognize.ts).
 */
export const CJK_CLASS = "[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u30FC\\uFF70]";
const CJK = new RegExp(CJK_CLASS, "u");

export function hasCjk(text: string): boolean {
  return CJK.test(text);
}
