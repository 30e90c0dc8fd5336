-- Videos, their ingest jobs and everything the pipeline writes about them.
CREATE TABLE videos (
  id              TEXT PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  collection_id   TEXT NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
  filename        TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('queued', 'processing', 'ready', 'failed')),
  progress_pct    REAL NOT NULL DEFAULT 0,
  container       TEXT,
  mime_type       TEXT,
  duration_secs   REAL,
  width           INTEGER,
  height          INTEGER,
  fps             REAL,
  codec           TEXT,
  audio_codec     TEXT,
  has_audio       INTEGER NOT NULL DEFAULT 0,
  file_size_bytes INTEGER NOT NULL,
  storage_bytes   INTEGER NOT NULL DEFAULT 0,
  source_path     TEXT NOT NULL,         -- relative to the data dir
  poster_path     TEXT,                  -- relative to the data dir
  stages          TEXT NOT NULL DEFAULT '{}',  -- JSON: stage -> {status, reason?, ...}
  error_code      TEXT,
  error_message   TEXT,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
CREATE INDEX videos_account ON videos (account_id, created_at);
CREATE INDEX videos_collection ON videos (collection_id);

CREATE TABLE jobs (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  video_id         TEXT NOT NULL REFERENCES videos (id) ON DELETE CASCADE,
  status           TEXT NOT NULL CHECK (status IN ('queued', 'pending', 'processing', 'done', 'failed')),
  stage            TEXT,
  progress_pct     REAL NOT NULL DEFAULT 0,
  error_code       TEXT,
  error_message    TEXT,
  attempts         INTEGER NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_expires_at INTEGER,              -- epoch ms; a crashed worker's lease runs out and the job is claimed again
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX jobs_claim ON jobs (status, created_at);
CREATE INDEX jobs_account ON jobs (account_id, created_at);
CREATE INDEX jobs_video ON jobs (video_id);

-- Sampled frames. Vectors live in frame_vectors (exact, for rescoring) and in a vec0 table.
CREATE TABLE frames (
  id            INTEGER PRIMARY KEY,
  video_id      TEXT NOT NULL REFERENCES videos (id) ON DELETE CASCADE,
  account_id    TEXT NOT NULL,
  collection_id TEXT NOT NULL,
  shot_index    INTEGER NOT NULL,
  timestamp     REAL NOT NULL,
  model_id      TEXT NOT NULL
);
CREATE INDEX frames_video ON frames (video_id, timestamp);
CREATE TABLE frame_vectors (
  frame_id  INTEGER PRIMARY KEY REFERENCES frames (id) ON DELETE CASCADE,
  embedding BLOB NOT NULL
);

CREATE TABLE shots (
  id             INTEGER PRIMARY KEY,
  video_id       TEXT NOT NULL REFERENCES videos (id) ON DELETE CASCADE,
  account_id     TEXT NOT NULL,
  collection_id  TEXT NOT NULL,
  shot_index     INTEGER NOT NULL,
  start_secs     REAL NOT NULL,
  end_secs       REAL NOT NULL,
  keyframe_secs  REAL NOT NULL,
  thumbnail_path TEXT,
  labels         TEXT NOT NULL DEFAULT '[]',   -- JSON [{label, score}]
  caption        TEXT,
  model_id       TEXT,
  UNIQUE (video_id, shot_index)
);
CREATE TABLE shot_vectors (
  shot_id   INTEGER PRIMARY KEY REFERENCES shots (id) ON DELETE CASCADE,
  embedding BLOB NOT NULL
);

CREATE TABLE transcript_segments (
  id            INTEGER PRIMARY KEY,
  video_id      TEXT NOT NULL REFERENCES videos (id) ON DELETE CASCADE,
  account_id    TEXT NOT NULL,
  collection_id TEXT NOT NULL,
  start_secs    REAL NOT NULL,
  end_secs      REAL NOT NULL,
  text          TEXT NOT NULL,
  model_id      TEXT NOT NULL
);
CREATE INDEX transcript_video ON transcript_segments (video_id, start_secs);

-- Porter stemming + unicode61 so "running" finds "run"; external content keeps one copy of the text.
CREATE VIRTUAL TABLE transcript_fts USING fts5 (
  text,
  content = 'transcript_segments',
  content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER transcript_ai AFTER INSERT ON transcript_segments BEGIN
  INSERT INTO transcript_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER transcript_ad AFTER DELETE ON transcript_segments BEGIN
  INSERT INTO transcript_fts (transcript_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
