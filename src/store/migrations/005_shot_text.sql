-- Scene text matching (search's scene mode): the words of each shot's labels and caption, so a
-- query finds the shots that mention it through an index instead of a LIKE scan of every shot.
-- Contentless (the text lives in shots.labels / shots.caption); kept in step by triggers, so every
-- write path — replaceShots, cascaded deletes of a video or account — is covered.
CREATE VIRTUAL TABLE shot_text_fts USING fts5 (
  text,
  content = '',
  contentless_delete = 1,
  tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER shot_text_ai AFTER INSERT ON shots BEGIN
  INSERT INTO shot_text_fts (rowid, text) VALUES (
    new.id,
    coalesce((SELECT group_concat(json_extract(j.value, '$.label'), ' ') FROM json_each(new.labels) j), '') || ' ' || coalesce(new.caption, '')
  );
END;
CREATE TRIGGER shot_text_ad AFTER DELETE ON shots BEGIN
  DELETE FROM shot_text_fts WHERE rowid = old.id;
END;
CREATE TRIGGER shot_text_au AFTER UPDATE OF labels, caption ON shots BEGIN
  DELETE FROM shot_text_fts WHERE rowid = old.id;
  INSERT INTO shot_text_fts (rowid, text) VALUES (
    new.id,
    coalesce((SELECT group_concat(json_extract(j.value, '$.label'), ' ') FROM json_each(new.labels) j), '') || ' ' || coalesce(new.caption, '')
  );
END;

INSERT INTO shot_text_fts (rowid, text)
SELECT id, coalesce((SELECT group_concat(json_extract(j.value, '$.label'), ' ') FROM json_each(shots.labels) j), '') || ' ' || coalesce(caption, '')
FROM shots;
