-- Issue 26: the node registry. Every process that serves or works (`vsearch serve`, `vsearch
-- worker`, the embedded default that does both) has a row under its node id (`<data-dir>/node-id`),
-- renewed by a heartbeat on the database's clock: `vsearch nodes` and GET /v1/system/nodes list
-- them with what they run. A stopped node keeps its row (stopped_at set) until it starts again.
CREATE TABLE nodes (
  id           TEXT PRIMARY KEY,             -- the node id (one per data dir)
  role         TEXT NOT NULL CHECK (role IN ('all', 'serve', 'worker')),
  kinds        TEXT NOT NULL,                -- JSON array of the task kinds it claims
  concurrency  INTEGER NOT NULL,             -- its ingest/OCR slots
  device       TEXT NOT NULL,                -- where its inference runs (cpu, cuda, …)
  models       TEXT NOT NULL,                -- JSON {"image-text": model id or null, "speech": …}
  version      TEXT NOT NULL,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  started_at   INTEGER NOT NULL,             -- epoch ms, database clock
  heartbeat_at INTEGER NOT NULL,             -- epoch ms, database clock
  stopped_at   INTEGER,                      -- set by a clean stop
  refused      TEXT                          -- why it claims nothing now (its models differ from the cluster's)
);
