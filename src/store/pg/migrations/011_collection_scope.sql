-- PostgreSQL form of SQLite's 016_collection_scope.sql: a collection's frames (shots) of a model
-- found by index, not by reading the account's. pgvector's scoped look-ups (countInScope, then
-- nearestExact for a small scope) filtered collection_id out of frames_account's rows or a
-- sequential scan: ~4 000 pages read for a 5 000-row collection of a 200 000-row account, 58 with
-- this index (EXPLAIN ANALYZE, BUFFERS). A plain CREATE INDEX (a migration is one transaction, so
-- not CONCURRENTLY): it holds writes to frames/shots off while it builds, seconds per million rows.
CREATE INDEX frames_collection ON frames (account_id, collection_id, model_id);
CREATE INDEX shots_collection ON shots (account_id, collection_id, model_id);
