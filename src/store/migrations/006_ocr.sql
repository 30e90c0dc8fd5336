-- On-screen text (SPEC §12): one row per line of text and the time range it was shown, written by
-- the `ocr` ingest stage (replace per video). Box in fractions of the frame (0..1), confidence 0–100.
CREATE TABLE ocr_lines (
  id            INTEGER PRIMARY KEY,
  video_id      TEXT NOT NULL REFERENCES videos (id) ON DELETE CASCADE,
  account_id    TEXT NOT NULL,
  collection_id TEXT NOT NULL,
  start_secs    REAL NOT NULL,
  end_secs      REAL NOT NULL,
  text          TEXT NOT NULL,
  confidence    REAL NOT NULL,
  box_x         REAL NOT NULL,
  box_y         REAL NOT NULL,
  box_w         REAL NOT NULL,
  box_h         REAL NOT NULL
);
CREATE INDEX ocr_lines_video ON ocr_lines (video_id, start_secs);
CREATE INDEX ocr_lines_account ON ocr_lines (account_id);

-- Same tokenizer as the transcript, so a query matches said and shown words alike.
CREATE VIRTUAL TABLE ocr_fts USING fts5 (
  text,
  content = 'ocr_lines',
  content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER ocr_lines_ai AFTER INSERT ON ocr_lines BEGIN
  INSERT INTO ocr_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER ocr_lines_ad AFTER DELETE ON ocr_lines BEGIN
  INSERT INTO ocr_fts (ocr_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;

-- Progressive indexing: the stages a job still has to run after the video became searchable
-- (JSON array of stage names, e.g. ["ocr"]); empty once it is done.
ALTER TABLE jobs ADD COLUMN stages_pending TEXT NOT NULL DEFAULT '[]';
