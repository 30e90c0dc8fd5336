-- Idempotent ingest: the SHA-256 of a video's source, unique per collection. `vsearch ingest`
-- skips a file whose content the collection already holds. HTTP uploads leave it NULL (not hashed:
-- an upload of known bytes is a new video, and hashing on the request path costs throughput).
ALTER TABLE videos ADD COLUMN content_hash TEXT;
CREATE UNIQUE INDEX videos_content_hash ON videos (collection_id, content_hash) WHERE content_hash IS NOT NULL;
