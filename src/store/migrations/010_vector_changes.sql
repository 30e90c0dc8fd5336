-- Issue 27: the change log the in-memory vector index's snapshot is checked against
-- (src/search/index-snapshot.ts). One row per video whose vector rows (frames, shots and their
-- vectors) changed, with the sequence number of its latest change; a deleted video's row stays (a
-- tombstone) until a snapshot newer than it prunes it. A snapshot records the sequence number it
-- reflects (its watermark); at the next start the videos changed after it are dropped from the
-- loaded index and read again from these tables, so rows added, replaced or deleted meanwhile,
-- by this process or another (CLI, restore), are all seen. A deleted video's row goes with it
-- (videos_changed_ad: nothing of a deleted account may remain); the snapshot's videos missing
-- from `videos` are dropped at load instead (index-loader.ts).
--
-- Not SQLite's rowids: frames/shots ids are reused once the highest ones are deleted (no
-- AUTOINCREMENT), so "rows with id > watermark" would miss a new row that took a freed id and
-- could not see deletions at all. The sequence is one counter row, bumped in the same
-- transaction as the change: writers of vector rows serialise on it, so sequence order is commit
-- order. PostgreSQL (issue 25) keeps the same design: the counter row's lock is held to commit
-- (a plain SEQUENCE is not: a later nextval can commit first and be passed by a watermark), and
-- the same triggers in PL/pgSQL.
-- database_id: a random name for this database's change history, written in the snapshot; a
-- snapshot of another database (a data dir's files mixed by hand) names another one and is not used.
CREATE TABLE vector_change_seq (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  seq         INTEGER NOT NULL,
  database_id TEXT NOT NULL
);
INSERT INTO vector_change_seq (id, seq, database_id) VALUES (1, 0, lower(hex(randomblob(16))));

CREATE TABLE vector_changes (
  video_id   TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  seq        INTEGER NOT NULL
);
CREATE INDEX vector_changes_seq ON vector_changes (seq);

-- Vectors arrive in frame_vectors / shot_vectors (their frame / shot row is already there).
CREATE TRIGGER frame_vectors_changed_ai AFTER INSERT ON frame_vectors BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT f.video_id, f.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1) FROM frames f WHERE f.id = new.frame_id
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
END;
CREATE TRIGGER frame_vectors_changed_au AFTER UPDATE ON frame_vectors BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT f.video_id, f.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1) FROM frames f WHERE f.id IN (old.frame_id, new.frame_id)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
END;
CREATE TRIGGER shot_vectors_changed_ai AFTER INSERT ON shot_vectors BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT s.video_id, s.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1) FROM shots s WHERE s.id = new.shot_id
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
END;
CREATE TRIGGER shot_vectors_changed_au AFTER UPDATE ON shot_vectors BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT s.video_id, s.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1) FROM shots s WHERE s.id IN (old.shot_id, new.shot_id)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
END;

-- Deletions (direct, or cascading from the video): the frame / shot row says whose they were.
CREATE TRIGGER frames_changed_ad AFTER DELETE ON frames BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    VALUES (old.video_id, old.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1))
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER shots_changed_ad AFTER DELETE ON shots BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    VALUES (old.video_id, old.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1))
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
END;

-- A row moved between videos, accounts, collections or models: both sides change.
CREATE TRIGGER frames_changed_au AFTER UPDATE OF video_id, account_id, collection_id, model_id ON frames BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    VALUES (old.video_id, old.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1))
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
  INSERT INTO vector_changes (video_id, account_id, seq)
    VALUES (new.video_id, new.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1))
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
END;
CREATE TRIGGER shots_changed_au AFTER UPDATE OF video_id, account_id, collection_id, model_id ON shots BEGIN
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1;
  INSERT INTO vector_changes (video_id, account_id, seq)
    VALUES (old.video_id, old.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1))
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
  INSERT INTO vector_changes (video_id, account_id, seq)
    VALUES (new.video_id, new.account_id, (SELECT seq FROM vector_change_seq WHERE id = 1))
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
END;

-- A deleted video leaves no row here (its frames' and shots' delete triggers, run by the cascade
-- before this one, wrote one): the loader drops a snapshot's videos that no longer exist.
CREATE TRIGGER videos_changed_ad AFTER DELETE ON videos BEGIN
  DELETE FROM vector_changes WHERE video_id = old.id;
END;
