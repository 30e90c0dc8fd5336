-- Search feedback and the per-account score thresholds it tunes (docs/SEARCH.md).

-- One row per (account, video, segment start): re-sending feedback for the same segment replaces
-- the row. `down` rows are the hidden segments. `threshold_delta` is what this row added to its
-- threshold, so replacing or clearing the feedback takes exactly that back out.
CREATE TABLE search_feedback (
  id              INTEGER PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  video_id        TEXT NOT NULL REFERENCES videos (id) ON DELETE CASCADE,
  timestamp_start REAL NOT NULL,
  signal          TEXT NOT NULL CHECK (signal IN ('up', 'down')),
  query           TEXT,
  raw_score       REAL,
  threshold_key   TEXT,
  threshold_delta REAL NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
CREATE INDEX search_feedback_video ON search_feedback (account_id, video_id, timestamp_start);

-- Effective threshold per account and key (`video:default`, `scene:default`, `scene:text`,
-- `transcript:default`). No row = the documented default.
CREATE TABLE search_thresholds (
  account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key        TEXT NOT NULL,
  value      REAL NOT NULL,
  ups        INTEGER NOT NULL DEFAULT 0,
  downs      INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (account_id, key)
);
