-- Issue 22: people managed without e-mail, and the first run in the browser.
-- A password an admin set (or reset) is one-time: the user must choose their own at next sign-in,
-- and until then the session may only do that (and sign out).
ALTER TABLE users ADD COLUMN must_change_password INTEGER NOT NULL DEFAULT 0;

-- First run: while no account exists, `serve` prints a setup link whose token (only its SHA-256 is
-- kept here) lets the browser create the first account and its admin. Every link printed stays
-- valid until one is used; creating any account makes them all useless, and the first setup
-- deletes them.
CREATE TABLE setup_tokens (
  token_hash TEXT PRIMARY KEY,
  created_at TEXT NOT NULL
);

-- A video indexed from a damaged or truncated file says how far it decoded
-- (`partial: decoded 0:00–0:03 of 0:10`).
ALTER TABLE videos ADD COLUMN warning TEXT;
