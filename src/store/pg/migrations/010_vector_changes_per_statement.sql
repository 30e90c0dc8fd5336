-- The vector change log's triggers (002, 006), once per statement instead of once per row. Per
-- row, writing a video's N frames bumped the one counter row and upserted the video's one change
-- row N times in one transaction; each update of a row the transaction had already updated walks
-- the chain of its earlier versions, so the cost grew with N² (measured: 2 000 frames 1.5 s, 4 000
-- frames 5 s, 20 000 frames over two minutes), all the while holding the counter row's lock that
-- every other commit writing vectors waits for. Found when test/vector/app-probe.test.ts (20 000
-- frames) first ran on PostgreSQL. Now a statement bumps the counter once and writes one change
-- row per video it touched; a statement that touched no row writes nothing. The log means what it
-- meant: a video's row carries the sequence number of its latest change (one number per statement
-- rather than per row: nothing counts them).
DROP TRIGGER frame_vectors_changed ON frame_vectors;
DROP TRIGGER shot_vectors_changed ON shot_vectors;
DROP TRIGGER frames_changed ON frames;
DROP TRIGGER shots_changed ON shots;
DROP FUNCTION vs_frame_vectors_changed();
DROP FUNCTION vs_shot_vectors_changed();
DROP FUNCTION vs_rows_changed();

-- Vectors inserted or replaced: the videos of the frames / shots they belong to (both, on a move).
CREATE FUNCTION vs_frame_vectors_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM new_rows) THEN
    s := vs_next_vector_change();
    INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT DISTINCT ON (f.video_id) f.video_id, f.account_id, s FROM frames f
     WHERE f.id IN (SELECT frame_id FROM new_rows)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER frame_vectors_inserted AFTER INSERT ON frame_vectors
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION vs_frame_vectors_inserted();

CREATE FUNCTION vs_frame_vectors_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM new_rows) THEN
    s := vs_next_vector_change();
    INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT DISTINCT ON (f.video_id) f.video_id, f.account_id, s FROM frames f
     WHERE f.id IN (SELECT frame_id FROM new_rows UNION SELECT frame_id FROM old_rows)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER frame_vectors_updated AFTER UPDATE ON frame_vectors
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vs_frame_vectors_updated();

CREATE FUNCTION vs_shot_vectors_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM new_rows) THEN
    s := vs_next_vector_change();
    INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT DISTINCT ON (x.video_id) x.video_id, x.account_id, s FROM shots x
     WHERE x.id IN (SELECT shot_id FROM new_rows)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER shot_vectors_inserted AFTER INSERT ON shot_vectors
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION vs_shot_vectors_inserted();

CREATE FUNCTION vs_shot_vectors_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM new_rows) THEN
    s := vs_next_vector_change();
    INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT DISTINCT ON (x.video_id) x.video_id, x.account_id, s FROM shots x
     WHERE x.id IN (SELECT shot_id FROM new_rows UNION SELECT shot_id FROM old_rows)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER shot_vectors_updated AFTER UPDATE ON shot_vectors
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vs_shot_vectors_updated();

-- Frames and shots deleted (directly or by cascade): their videos change, if they still exist (a
-- deleted video needs no row: 006). The same function serves both tables (the same columns).
CREATE FUNCTION vs_rows_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM old_rows o JOIN videos v ON v.id = o.video_id) THEN
    s := vs_next_vector_change();
    INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT DISTINCT ON (o.video_id) o.video_id, o.account_id, s FROM old_rows o
     WHERE EXISTS (SELECT 1 FROM videos v WHERE v.id = o.video_id)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER frames_deleted AFTER DELETE ON frames
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION vs_rows_deleted();
CREATE TRIGGER shots_deleted AFTER DELETE ON shots
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION vs_rows_deleted();

-- Frames and shots moved (video, account, collection) or given another model: the old video (if
-- it still exists) and the new one, which takes the new account. A statement trigger cannot name
-- columns (UPDATE OF …) and have transition tables, so the rows whose four columns changed are
-- picked here.
CREATE FUNCTION vs_rows_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id
              WHERE (o.video_id, o.account_id, o.collection_id, o.model_id)
                    IS DISTINCT FROM (n.video_id, n.account_id, n.collection_id, n.model_id)) THEN
    s := vs_next_vector_change();
    INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT DISTINCT ON (o.video_id) o.video_id, o.account_id, s FROM old_rows o JOIN new_rows n ON n.id = o.id
     WHERE (o.video_id, o.account_id, o.collection_id, o.model_id)
           IS DISTINCT FROM (n.video_id, n.account_id, n.collection_id, n.model_id)
       AND EXISTS (SELECT 1 FROM videos v WHERE v.id = o.video_id)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
    INSERT INTO vector_changes (video_id, account_id, seq)
    SELECT DISTINCT ON (n.video_id) n.video_id, n.account_id, s FROM old_rows o JOIN new_rows n ON n.id = o.id
     WHERE (o.video_id, o.account_id, o.collection_id, o.model_id)
           IS DISTINCT FROM (n.video_id, n.account_id, n.collection_id, n.model_id)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER frames_updated AFTER UPDATE ON frames
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION vs_rows_updated();
CREATE TRIGGER shots_updated AFTER UPDATE ON shots
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION vs_rows_updated();
