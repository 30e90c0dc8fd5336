-- Issue 26: facts about the install every node checks itself against. First (and so far only) key:
-- `secret_fingerprint`, an HMAC of a fixed label keyed by the cluster secret (signing/
-- secret-fingerprint.ts): written by the first process that opens the database, compared by every
-- later one, so a node holding another secret (it would sign links and seal webhook secrets the
-- others cannot verify) refuses to start. Never the secret, nor a plain hash of it.
CREATE TABLE cluster_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
