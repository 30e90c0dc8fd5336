/**
 * The database's clock on PostgreSQL: the form of `dbNowMs` (store/sql.ts on the `queue` branch:
 * SQLite's `CAST(unixepoch('subsec') * 1000 AS INTEGER)`) that leases, due times and claims compare
 * against, so processes on machines whose clocks drift apart still agree on who holds what.
 *
 * `statement_timestamp()`: fixed within one statement and new for the next, as SQLite's 'now' is
 * (`now()` would stay at the transaction's start for every statement of a long unit of work).
 * Floored to whole ms, as SQLite's CAST truncates. `param` is the placeholder of the skew tests add
 * ("?1"), 0 in production.
 */
export const pgDbNowMs = (param: string): string =>
  `(floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint + ${param})`;
