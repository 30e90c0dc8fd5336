-- PostgreSQL form of SQLite's 014_nodes.sql: the node registry (issue 26). Times are epoch ms on
-- the database clock.
CREATE TABLE nodes (
  id           text PRIMARY KEY,
  role         text NOT NULL CHECK (role IN ('all', 'serve', 'worker')),
  kinds        text NOT NULL,
  concurrency  integer NOT NULL,
  device       text NOT NULL,
  models       text NOT NULL,
  version      text NOT NULL,
  host         text NOT NULL,
  pid          integer NOT NULL,
  started_at   bigint NOT NULL,
  heartbeat_at bigint NOT NULL,
  stopped_at   bigint,
  refused      text
);
