-- PostgreSQL form of SQLite's 013_people.sql:
-- one-time passwords, first-run setup tokens, and how far a damaged video decoded.
ALTER TABLE users ADD COLUMN must_change_password integer NOT NULL DEFAULT 0;

CREATE TABLE setup_tokens (
  token_hash text PRIMARY KEY,
  created_at text NOT NULL
);

ALTER TABLE videos ADD COLUMN warning text;
