-- Accounts own everything. Their ids are `usr_…` (SPEC §3: `user_id` on every record is the
-- owning account); the people who sign in are `users` (`mbr_…`) of an account.
CREATE TABLE accounts (
  id              TEXT PRIMARY KEY,
  name            TEXT NOT NULL,
  plan            TEXT NOT NULL DEFAULT 'enterprise' CHECK (plan IN ('free', 'payg', 'enterprise')),
  credits_balance REAL,            -- NULL = unlimited (the self-hosted default)
  created_at      TEXT NOT NULL
);

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
  password_hash TEXT NOT NULL,
  role          TEXT NOT NULL CHECK (role IN ('admin', 'member')),
  created_at    TEXT NOT NULL
);
CREATE INDEX users_account ON users (account_id);

-- Only the SHA-256 of a session token is stored.
CREATE TABLE sessions (
  id         TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  ended_at   TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);

-- Only the SHA-256 of a key is stored; revoked keys stay listed.
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  prefix       TEXT NOT NULL,
  key_hash     TEXT NOT NULL UNIQUE,
  permissions  TEXT NOT NULL CHECK (permissions IN ('all', 'read_only')),
  last_used_at TEXT,
  created_at   TEXT NOT NULL,
  revoked_at   TEXT
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE collections (
  id         TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (account_id, name)
);

-- Outbox: an event row is written in the same transaction as the change that caused it.
-- No foreign key to accounts: `account.deleted` must outlive the account it announces.
CREATE TABLE events (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  id            TEXT NOT NULL UNIQUE,
  account_id    TEXT NOT NULL,
  type          TEXT NOT NULL,
  payload       TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  dispatched_at TEXT
);
CREATE INDEX events_pending ON events (seq) WHERE dispatched_at IS NULL;
CREATE INDEX events_account ON events (account_id);
