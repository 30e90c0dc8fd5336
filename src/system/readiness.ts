/**
 * GET /readyz's answer (SPEC §10): the database answers, the data dir has room, the server is not
 * shutting down. The search index's load is reported but never makes the instance unready: while
 * it loads only vector searches wait (503 + Retry-After), everything else serves.
 */
export function readiness(d: {
  pingDatabase: () => Promise<void>;
  storage: { check(): { ok: boolean; detail: string } };
  searchIndexStatus: () => string;
  closing: () => boolean;
}): () => Promise<{ ok: boolean; checks: Record<string, string> }> {
  return async () => {
    const checks: Record<string, string> = {};
    try {
      await d.pingDatabase();
      checks.database = "ok";
    } catch (e) {
      checks.database = (e as Error).message;
    }
    const disk = d.storage.check();
    checks.storage = disk.detail;
    const closing = d.closing();
    checks.shutdown = closing ? "in progress" : "no";
    checks.search_index = d.searchIndexStatus();
    return { ok: checks.database === "ok" && disk.ok && !closing, checks };
  };
}
