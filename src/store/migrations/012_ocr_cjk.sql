-- On-screen text in scripts written without spaces (issue 28): the full-text index of OCR lines
-- now reads `search_text`, the line as the index should see it (src/indexing/fts-text.ts: Chinese,
-- Japanese and Korean runs as overlapping character pairs, everything else unchanged), written by
-- the store with the line. Lines indexed before this were read by tesseract's English model, so
-- their text is their search text. Same tokenizer as before: Latin text ranks as it did.
DROP TRIGGER ocr_lines_ai;
DROP TRIGGER ocr_lines_ad;
DROP TABLE ocr_fts;
ALTER TABLE ocr_lines ADD COLUMN search_text TEXT NOT NULL DEFAULT '';
UPDATE ocr_lines SET search_text = text;
CREATE VIRTUAL TABLE ocr_fts USING fts5 (
  search_text,
  content = 'ocr_lines',
  content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO ocr_fts (ocr_fts) VALUES ('rebuild');
CREATE TRIGGER ocr_lines_ai AFTER INSERT ON ocr_lines BEGIN
  INSERT INTO ocr_fts (rowid, search_text) VALUES (new.id, new.search_text);
END;
CREATE TRIGGER ocr_lines_ad AFTER DELETE ON ocr_lines BEGIN
  INSERT INTO ocr_fts (ocr_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
END;
