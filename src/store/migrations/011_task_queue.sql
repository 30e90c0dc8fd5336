-- The one lease queue (docs/ARCHITECTURE.md "The task queue"). Every piece of background work on
-- a video is a row here while it waits or runs: its ingest (the first stages), its on-screen text
-- (`ocr`, queued once the video is searchable) and its web rendition. A row is deleted when its
-- task ends; the outcome lives where users read it (the job, the video's stages, the rendition).
-- Times are epoch ms on the database's clock, never a process's.
CREATE TABLE tasks (
  id               INTEGER PRIMARY KEY,      -- also the queue order within an account (FIFO)
  kind             TEXT NOT NULL CHECK (kind IN ('ingest', 'ocr', 'rendition')),
  account_id       TEXT NOT NULL,
  video_id         TEXT NOT NULL REFERENCES videos (id) ON DELETE CASCADE,
  job_id           TEXT REFERENCES jobs (id) ON DELETE CASCADE,
  payload          TEXT,                     -- JSON the task before hands over (the OCR task: probe + decode plan)
  state            TEXT NOT NULL CHECK (state IN ('queued', 'running')),
  attempts         INTEGER NOT NULL DEFAULT 0, -- claims so far; a claim whose worker died counts
  lease_owner      TEXT,                     -- `<node id>/<process incarnation>`
  lease_node       TEXT,                     -- the node (data dir) the owner runs on
  lease_expires_at INTEGER,
  started_at       INTEGER,
  queued_at        INTEGER NOT NULL
);
CREATE INDEX tasks_account ON tasks (account_id, state, kind);
CREATE INDEX tasks_video ON tasks (video_id);
CREATE INDEX tasks_owner ON tasks (lease_owner);
CREATE INDEX tasks_node ON tasks (lease_node);
-- At most one task of a kind per job, and one rendition per video, waiting or running.
CREATE UNIQUE INDEX tasks_job_kind ON tasks (job_id, kind) WHERE job_id IS NOT NULL;
CREATE UNIQUE INDEX tasks_rendition ON tasks (video_id) WHERE kind = 'rendition';

-- Fair share: the service (task ms) each account has had since it last had no work. The claim
-- serves the account with the least first; an account that comes back from idle starts just
-- ahead of the least served account that has work, so it neither waits behind a backlog nor
-- brings banked credit (or debt) from yesterday.
CREATE TABLE task_accounts (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  served_ms  INTEGER NOT NULL DEFAULT 0,
  typical_ms INTEGER                          -- moving average of its tasks' lengths (Retry-After)
);

-- Unfinished work of the previous version becomes tasks. A job whose video is searchable and
-- whose OCR was pending continues at OCR; any other unfinished job runs again from the top.
INSERT INTO tasks (kind, account_id, video_id, job_id, state, attempts, queued_at)
SELECT CASE WHEN v.status = 'ready' AND json_extract(v.stages, '$.ocr.status') = 'pending' THEN 'ocr' ELSE 'ingest' END,
       j.account_id, j.video_id, j.id, 'queued',
       CASE WHEN v.status = 'ready' AND json_extract(v.stages, '$.ocr.status') = 'pending' THEN 0 ELSE j.attempts END,
       CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM jobs j JOIN videos v ON v.id = j.video_id
 WHERE j.status IN ('queued', 'pending', 'processing')
 ORDER BY j.created_at, j.rowid;
UPDATE jobs SET status = 'queued'
 WHERE status = 'pending'
    OR (status = 'processing' AND id IN (SELECT job_id FROM tasks WHERE kind = 'ingest'));
INSERT INTO tasks (kind, account_id, video_id, state, attempts, queued_at)
SELECT 'rendition', account_id, video_id, 'queued', attempts, CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM renditions WHERE status IN ('pending', 'processing')
 ORDER BY created_at;
UPDATE renditions SET status = 'pending' WHERE status = 'processing';

-- Leases now live on the task; the records keep what users read.
DROP INDEX renditions_claim;
ALTER TABLE renditions DROP COLUMN lease_owner;
ALTER TABLE renditions DROP COLUMN lease_expires_at;
ALTER TABLE renditions DROP COLUMN attempts;
DROP INDEX jobs_claim;
CREATE INDEX jobs_status ON jobs (account_id, status);
ALTER TABLE jobs DROP COLUMN lease_owner;
ALTER TABLE jobs DROP COLUMN lease_expires_at;

-- The webhook fan-out claim: a dispatcher claims a batch of undispatched outbox events for a
-- while (database clock) before it turns them into deliveries, so two dispatchers never both
-- fan out, or race over, the same event.
ALTER TABLE events ADD COLUMN claimed_by TEXT;
ALTER TABLE events ADD COLUMN claim_expires_at INTEGER;

-- A delivery attempt under way holds a lease (database clock): no other dispatcher attempts it
-- until the attempt records its outcome or the lease runs out (its dispatcher died).
ALTER TABLE webhook_deliveries ADD COLUMN lease_expires_at INTEGER;
