-- Rate-limit windows shared by every server on this database (issue 26): one row per (group,
-- who), one upsert per limited request (src/http/rate-windows.ts). PostgreSQL only: the embedded
-- store has one server process, which keeps its windows in memory (src/http/rate-limit.ts).
-- UNLOGGED: no WAL for a row that changes on every request (no flush waits, nothing replicated);
-- after a crash of the database server the table is emptied, which forgets at most a minute of
-- counts. fillfactor 70: room on the page for HOT updates (the key never changes).
CREATE UNLOGGED TABLE rate_windows (
  grp text NOT NULL,
  who text NOT NULL,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  ok boolean NOT NULL,
  PRIMARY KEY (grp, who)
) WITH (fillfactor = 70);
