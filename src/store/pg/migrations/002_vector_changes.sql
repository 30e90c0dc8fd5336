-- PostgreSQL form of SQLite's 010_vector_changes.sql: the change log the in-memory index's
-- snapshot is checked against. One counter
-- row whose lock is held to commit (a SEQUENCE is not: a later nextval can commit first and be
-- passed by a watermark), bumped by row triggers as SQLite's triggers bump it.
CREATE TABLE vector_change_seq (
  id          integer PRIMARY KEY CHECK (id = 1),
  seq         bigint NOT NULL,
  database_id text NOT NULL
);
INSERT INTO vector_change_seq (id, seq, database_id) VALUES (1, 0, md5(random()::text || clock_timestamp()::text));

CREATE TABLE vector_changes (
  video_id   text PRIMARY KEY,
  account_id text NOT NULL,
  seq        bigint NOT NULL
);
CREATE INDEX vector_changes_seq ON vector_changes (seq);

CREATE FUNCTION vs_next_vector_change() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  UPDATE vector_change_seq SET seq = seq + 1 WHERE id = 1 RETURNING seq
$$;

-- Vectors inserted or replaced: the video of the frame / shot they belong to (both, on a move).
CREATE FUNCTION vs_frame_vectors_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint := vs_next_vector_change();
BEGIN
  INSERT INTO vector_changes (video_id, account_id, seq)
  SELECT DISTINCT ON (f.video_id) f.video_id, f.account_id, s FROM frames f
   WHERE f.id = NEW.frame_id OR (TG_OP = 'UPDATE' AND f.id = OLD.frame_id)
  ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  RETURN NULL;
END $$;
CREATE TRIGGER frame_vectors_changed AFTER INSERT OR UPDATE ON frame_vectors
  FOR EACH ROW EXECUTE FUNCTION vs_frame_vectors_changed();

CREATE FUNCTION vs_shot_vectors_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint := vs_next_vector_change();
BEGIN
  INSERT INTO vector_changes (video_id, account_id, seq)
  SELECT DISTINCT ON (x.video_id) x.video_id, x.account_id, s FROM shots x
   WHERE x.id = NEW.shot_id OR (TG_OP = 'UPDATE' AND x.id = OLD.shot_id)
  ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  RETURN NULL;
END $$;
CREATE TRIGGER shot_vectors_changed AFTER INSERT OR UPDATE ON shot_vectors
  FOR EACH ROW EXECUTE FUNCTION vs_shot_vectors_changed();

-- Frames and shots deleted (directly or by cascade) or moved: the old video changes; on a move,
-- the new one too (and takes the new account).
CREATE FUNCTION vs_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint := vs_next_vector_change();
BEGIN
  INSERT INTO vector_changes (video_id, account_id, seq) VALUES (OLD.video_id, OLD.account_id, s)
  ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO vector_changes (video_id, account_id, seq) VALUES (NEW.video_id, NEW.account_id, s)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER frames_changed AFTER DELETE OR UPDATE OF video_id, account_id, collection_id, model_id ON frames
  FOR EACH ROW EXECUTE FUNCTION vs_rows_changed();
CREATE TRIGGER shots_changed AFTER DELETE OR UPDATE OF video_id, account_id, collection_id, model_id ON shots
  FOR EACH ROW EXECUTE FUNCTION vs_rows_changed();

-- A deleted video leaves no row (nothing of a deleted account may remain): the cascade's
-- constraint triggers ("RI_…", first by name) and the frames'/shots' triggers above run before
-- this one; the loader drops a snapshot's videos that no longer exist.
CREATE FUNCTION vs_video_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM vector_changes WHERE video_id = OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER videos_changed AFTER DELETE ON videos FOR EACH ROW EXECUTE FUNCTION vs_video_deleted();
