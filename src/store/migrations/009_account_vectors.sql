-- An account's vectors without a whole-table scan: the calibration sample, the per-scope counts
-- and the sqlite-vec / CLI loads all ask "this account's frames (shots) of this model". Without
-- these, each of them read every row of every account (0.6 s at 1 M frames, measured by the
-- warm-up bench), and the time grew with the other tenants' libraries.
-- (SQLite ends every index with the rowid, so these also answer ORDER BY id.)
CREATE INDEX frames_account ON frames (account_id, model_id);
CREATE INDEX shots_account ON shots (account_id, model_id);
