-- Idempotent ingest: the SHA-256 of a video's source, unique per collection. `vsearch ingest`
-- skips a file whose content the collection already holds. HTTP uploads record the hash of the
-- first copy only (a second upload of the same bytes is still a new video, with NULL here).
ALTER TABLE videos ADD COLUMN content_hash TEXT;
CREATE UNIQUE INDEX videos_content_hash ON videos (collection_id, content_hash) WHERE content_hash IS NOT NULL;
