/**
 * Database errors by kind, the same on both backends (design §2.6): a service asks "was this a
 * unique violation?" or "is the database unreachable?" without knowing bun:sqlite's codes or
 * PostgreSQL's SQLSTATEs, and never by matching message text.
 *
 * | kind          | SQLite (bun:sqlite `code`)              | PostgreSQL (SQLSTATE, postgres.js `code`; Bun.SQL `errno`) |
 * |---------------|-----------------------------------------|-------------------------------------------------------------|
 * | unique        | SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY  | 23505                                                       |
 * | foreign_key   | SQLITE_CONSTRAINT_FOREIGNKEY            | 23503                                                       |
 * | constraint    | other SQLITE_CONSTRAINT_*               | 23xxx (23514 check, 23502 not null, 23P01 exclusion)        |
 * | retry         | –                                       | 40001 serialization failure, 40P01 deadlock                 |
 * | busy          | SQLITE_BUSY*, SQLITE_LOCKED*            | 55P03 lock not available                                    |
 * | storage_full  | SQLITE_FULL                             | 53100 disk full                                             |
 * | unavailable   | SQLITE_IOERR*, SQLITE_CANTOPEN          | 08xxx, 57P01–57P03, 53200/53300, 28xxx, 3D000; the driver's |
 * |               |                                         | CONNECTION_* / CONNECT_TIMEOUT; ECONNREFUSED, ECONNRESET …  |
 * | timeout       | –                                       | 57014 (statement_timeout, cancel)                           |
 * | misuse        | SQLITE_READONLY*, SQLITE_ERROR,         | 25xxx (25P02: statement in an aborted transaction), 42xxx,  |
 * |               | SQLITE_MISUSE, SQLITE_RANGE             | 22xxx (bad values reached the database), 0A000; a late call |
 * | other         | anything else                           | anything else                                               |
 */

export type StoreErrorKind =
  | "unique"
  | "foreign_key"
  | "constraint"
  | "retry"
  | "busy"
  | "storage_full"
  | "unavailable"
  | "timeout"
  | "misuse"
  | "other";

export class StoreError extends Error {
  /** The driver's code (e.g. "SQLITE_CONSTRAINT_UNIQUE", "23505", "ECONNREFUSED"), for logs. */
  readonly code: string | undefined;
  /** The constraint that failed: PostgreSQL's constraint name, SQLite's `table.column` list. */
  readonly constraint: string | undefined;

  constructor(
    readonly kind: StoreErrorKind,
    message: string,
    opts: { cause?: unknown; code?: string; constraint?: string } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "StoreError";
    this.code = opts.code;
    this.constraint = opts.constraint;
  }
}

/** Whether `err` is a store error of one of `kinds`. */
export const isStoreError = (err: unknown, ...kinds: StoreErrorKind[]): err is StoreError =>
  err instanceof StoreError && (kinds.length === 0 || kinds.includes(err.kind));

/** Connection-level failures of postgres.js and the socket below it. */
const CONNECTION_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

interface DriverError {
  name?: unknown;
  code?: unknown;
  errno?: unknown;
  message?: unknown;
  constraint_name?: unknown;
  constraint?: unknown;
  severity?: unknown;
}

/**
 * The store error `err` stands for, or null when `err` did not come from a database driver (an
 * application error thrown inside a unit of work passes through unchanged).
 */
export function toStoreError(err: unknown): StoreError | null {
  if (err instanceof StoreError) return err;
  if (!err || typeof err !== "object") return null;
  const e = err as DriverError;
  const message = typeof e.message === "string" ? e.message : String(err);
  const code = typeof e.code === "string" ? e.code : undefined;
  if (code?.startsWith("SQLITE_")) return sqliteError(code, message, err);
  const sqlstate = sqlstateOf(e, code);
  if (sqlstate) {
    const constraint = typeof e.constraint_name === "string" ? e.constraint_name : undefined;
    return new StoreError(pgKind(sqlstate), message, { cause: err, code: sqlstate, constraint });
  }
  if (code && CONNECTION_CODES.has(code)) {
    return new StoreError("unavailable", `database unreachable: ${message}`, { cause: err, code });
  }
  return null;
}

/** The SQLSTATE of a PostgreSQL error: postgres.js puts it in `code`, Bun.SQL in `errno`. */
function sqlstateOf(e: DriverError, code: string | undefined): string | undefined {
  const isState = (x: unknown): x is string => typeof x === "string" && /^[0-9A-Z]{5}$/.test(x);
  if (isState(code) && (e.name === "PostgresError" || typeof e.severity === "string")) return code;
  if (code?.startsWith("ERR_POSTGRES") && isState(e.errno)) return e.errno;
  return undefined;
}

export function pgKind(sqlstate: string): StoreErrorKind {
  switch (sqlstate) {
    case "23505":
      return "unique";
    case "23503":
      return "foreign_key";
    case "40001":
    case "40P01":
      return "retry";
    case "55P03":
      return "busy";
    case "53100":
      return "storage_full";
    case "57014":
      return "timeout";
    case "0A000":
      return "misuse";
    case "3D000": // the database named in the URL does not exist
      return "unavailable";
  }
  const cls = sqlstate.slice(0, 2);
  if (cls === "23") return "constraint";
  if (cls === "08" || cls === "57" || cls === "53" || cls === "28") return "unavailable";
  if (cls === "25" || cls === "42" || cls === "22") return "misuse";
  return "other";
}

function sqliteError(code: string, message: string, cause: unknown): StoreError {
  const kind = sqliteKind(code);
  // "UNIQUE constraint failed: users.email" / "NOT NULL constraint failed: a.n"
  const m = /constraint failed: (.+)$/.exec(message);
  const constraint = kind === "unique" || kind === "constraint" ? m?.[1] : undefined;
  return new StoreError(kind, message, { cause, code, constraint });
}

export function sqliteKind(code: string): StoreErrorKind {
  if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") return "unique";
  if (code === "SQLITE_CONSTRAINT_FOREIGNKEY") return "foreign_key";
  if (code.startsWith("SQLITE_CONSTRAINT")) return "constraint";
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "busy";
  if (code === "SQLITE_FULL") return "storage_full";
  if (code.startsWith("SQLITE_IOERR") || code.startsWith("SQLITE_CANTOPEN") || code === "SQLITE_NOMEM")
    return "unavailable";
  if (
    code.startsWith("SQLITE_READONLY") ||
    code === "SQLITE_ERROR" ||
    code === "SQLITE_MISUSE" ||
    code === "SQLITE_RANGE"
  )
    return "misuse";
  return "other";
}
