-- A deleted video or account left a row in vector_changes on PostgreSQL (the account-deletion
-- test found it: nothing of a deleted account may remain). The frames and shots a video's delete
-- cascades to are deleted by the foreign key's action, whose AFTER triggers PostgreSQL queues to
-- the end of the outer statement — after videos_changed removed the video's row — so
-- vs_rows_changed wrote it back. A change row is now written only for a video that still exists:
-- a deleted one needs none (the snapshot loader drops videos missing from `videos`).
CREATE OR REPLACE FUNCTION vs_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM videos WHERE id = OLD.video_id) THEN
    s := vs_next_vector_change();
    INSERT INTO vector_changes (video_id, account_id, seq) VALUES (OLD.video_id, OLD.account_id, s)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    s := coalesce(s, vs_next_vector_change());
    INSERT INTO vector_changes (video_id, account_id, seq) VALUES (NEW.video_id, NEW.account_id, s)
    ON CONFLICT (video_id) DO UPDATE SET seq = excluded.seq, account_id = excluded.account_id;
  END IF;
  RETURN NULL;
END $$;
