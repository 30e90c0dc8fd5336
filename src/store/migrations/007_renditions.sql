-- Web renditions (SPEC §11): one row per video once it is searchable. The rendition worker claims
-- `pending` rows with a lease (like jobs), decides from the probed codecs whether the browser can
-- play the source, and either marks the row `not_needed` or encodes `videos/<id>/web.mp4`.
CREATE TABLE renditions (
  video_id         TEXT PRIMARY KEY REFERENCES videos (id) ON DELETE CASCADE,
  account_id       TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'ready', 'failed', 'not_needed')),
  reason           TEXT,                 -- why a rendition is (not) needed, or why it failed
  path             TEXT,                 -- relative to the data dir, when ready
  size_bytes       INTEGER,
  attempts         INTEGER NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_expires_at INTEGER,              -- epoch ms; a crashed encoder's row is claimed again
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX renditions_claim ON renditions (status, created_at);
