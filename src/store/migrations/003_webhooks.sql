-- Webhook endpoints and their deliveries. The signing secret is stored encrypted (AES-256-GCM
-- with a key derived from the data dir's secret.key): it must be recoverable to sign, and a
-- copied database alone must not give it away.
CREATE TABLE webhooks (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  url            TEXT NOT NULL,
  events         TEXT NOT NULL,              -- JSON array of event types
  secret_sealed  TEXT NOT NULL,
  is_active      INTEGER NOT NULL DEFAULT 1,
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL
);
CREATE INDEX webhooks_account ON webhooks (account_id);

-- One row per (endpoint, event). `payload` is the exact body that is signed and sent, so every
-- retry sends identical bytes.
CREATE TABLE webhook_deliveries (
  id               TEXT PRIMARY KEY,
  webhook_id       TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  account_id       TEXT NOT NULL,
  event_id         TEXT NOT NULL,
  event            TEXT NOT NULL,
  payload          TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  manual_retry     INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER,                  -- epoch ms; NULL once final
  response_status  INTEGER,
  response_excerpt TEXT,
  error            TEXT,
  created_at       TEXT NOT NULL,
  delivered_at     TEXT,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_webhook ON webhook_deliveries (webhook_id, created_at);

-- Every grant and charge, so a balance can be explained.
CREATE TABLE credit_ledger (
  id            INTEGER PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  delta         REAL NOT NULL,
  reason        TEXT NOT NULL,
  balance_after REAL NOT NULL,
  created_at    TEXT NOT NULL
);
CREATE INDEX credit_ledger_account ON credit_ledger (account_id, id);
