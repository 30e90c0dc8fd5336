import { type Cluster, findPostgres, startCluster } from "../../test/pg/cluster.ts";

/**
 * The PostgreSQL a bench runs against: the server `--database-url` names (`given`), or a throw-away
 * cluster of this machine's PostgreSQL (test/pg/cluster.ts: loopback, fsync off), which the bench
 * stops when done. `url` is database `db` on it (the bench creates it); `adminUrl` the server's
 * maintenance database, for CREATE / DROP DATABASE.
 */
export async function benchPostgres(
  given: string | undefined,
  db: string,
): Promise<{ cluster: Cluster | null; adminUrl: string; url: string }> {
  const found = given ? null : findPostgres();
  if (found && "missing" in found) throw new Error(`no PostgreSQL: ${found.missing} (or pass --database-url)`);
  const cluster = found ? await startCluster(found.bin) : null;
  const adminUrl = given ?? cluster!.adminUrl;
  return { cluster, adminUrl, url: Object.assign(new URL(adminUrl), { pathname: `/${db}` }).toString() };
}
