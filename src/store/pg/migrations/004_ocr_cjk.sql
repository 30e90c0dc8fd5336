-- PostgreSQL form of SQLite's 012_ocr_cjk.sql:
-- the OCR full-text index reads `search_text`, the line as the store writes it for
-- the index (CJK runs as overlapping character pairs, src/indexing/fts-text.ts); the default parser
-- takes each pair as a word, as FTS5's unicode61 does.
ALTER TABLE ocr_lines ADD COLUMN search_text text NOT NULL DEFAULT '';
UPDATE ocr_lines SET search_text = text;
DROP INDEX ocr_fts;
ALTER TABLE ocr_lines DROP COLUMN tsv;
ALTER TABLE ocr_lines ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('vs_english'::regconfig, search_text)) STORED;
CREATE INDEX ocr_fts ON ocr_lines USING gin (tsv);
