-- PostgreSQL form of SQLite's 015_cluster_meta.sql: facts every node checks itself against (the
-- cluster secret's fingerprint).
CREATE TABLE cluster_meta (
  key   text PRIMARY KEY,
  value text NOT NULL
);
