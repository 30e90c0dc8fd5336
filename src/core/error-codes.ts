/**
 * The error catalogue: every code a client (HTTP body `{"detail": {"code", "message"}}`, CLI stderr,
 * MCP tool error) can receive, with the one HTTP status it is answered with and what it means.
 * `AppError` takes a code and reads its status here, so a code cannot carry two statuses and a typo
 * does not compile. SPEC §2's codes are all here with their statuses.
 *
 * Adding a code (docs/GUIDE.md "An error code"): add a row, throw `new AppError("CODE", message)`,
 * name it in the route's `errors: [...]`, then `bun scripts/gen-error-docs.ts` rewrites docs/ERRORS.md.
 * test/architecture/error-codes.test.ts fails on a row nothing uses and on docs that drifted.
 *
 * Job failures (`job.error.code`: DECODE_FAILED, CRASHED_REPEATEDLY, …) are a separate vocabulary
 * recorded on the job, not answered with a status; they are not listed here.
 */
export interface ErrorCodeEntry {
  /** The HTTP status the code is always answered with. */
  readonly status: number;
  /** One line: what happened and, where useful, what to do. */
  readonly meaning: string;
}

export const ERROR_CODES = {
  // 400: the request cannot be acted on as sent (not a schema problem: those are 422 in `detail[]`).
  BAD_REQUEST: { status: 400, meaning: "The request has no valid Host header (HTTP/1.1 requires one)." },
  HTTP_ERROR: {
    status: 400,
    meaning:
      "The HTTP framework refused the request before a route ran; answered with the framework's own 4xx status (400 here is nominal).",
  },
  NOT_A_SESSION: {
    status: 400,
    meaning: "Signing out or changing one's password needs a session token; an API key was sent.",
  },
  INVALID_AMOUNT: { status: 400, meaning: "A credit amount must be a positive number." },
  INVALID_PLAN: { status: 400, meaning: "The plan is not one of the known plans." },
  FILE_NOT_FOUND: { status: 400, meaning: "A local path given to the CLI is not a readable file." },
  NO_FILES: { status: 400, meaning: "The paths given to `vsearch ingest` hold no video files." },
  INVALID_BASE_URL: {
    status: 400,
    meaning: "The model mirror or hub URL is not an http(s) URL, or the model has no hub repository; pass --base-url.",
  },
  INVALID_MODEL: {
    status: 400,
    meaning: "A model source, manifest, archive or option is malformed; nothing was installed.",
  },
  MODEL_HASH_MISMATCH: {
    status: 400,
    meaning:
      "Incoming model files (a download, an import, a mirror's manifest) differ from the size or sha256 they must have; nothing was installed.",
  },
  MODEL_LOAD_FAILED: { status: 400, meaning: "The model's files are complete but the runtime cannot load them." },
  BACKUP_NOT_FOUND: { status: 400, meaning: "The backup archive to restore does not exist." },
  BAD_BACKUP_PATH: { status: 400, meaning: "A backup cannot be written inside the data dir it archives." },
  PASSWORD_UNCHANGED: { status: 400, meaning: "The new password is the current one; choose another." },
  ACCOUNT_REQUIRED: {
    status: 400,
    meaning: "A CLI command needs --account (a name or id): there are several accounts to choose from.",
  },
  ACCOUNT_AMBIGUOUS: { status: 400, meaning: "Several accounts have that name; pass the account's id instead." },

  // 401: who is calling is not established.
  UNAUTHORIZED: {
    status: 401,
    meaning: "No credential was sent, or the e-mail/password is wrong; send `Authorization: Bearer …`.",
  },
  INVALID_API_KEY: { status: 401, meaning: "The API key or session token is unknown or revoked." },
  SESSION_EXPIRED: { status: 401, meaning: "The session has expired; sign in again." },

  // 402: the account's plan or balance does not allow it.
  API_KEY_LIMIT_REACHED: { status: 402, meaning: "The plan's number of active API keys is reached; revoke one first." },
  WEBHOOK_LIMIT_REACHED: {
    status: 402,
    meaning: "The plan's number of active webhook endpoints is reached; deactivate or delete one first.",
  },
  INSUFFICIENT_CREDITS: { status: 402, meaning: "The account has too few credits; an operator can grant more." },

  // 403: the caller is known but may not do this.
  FORBIDDEN: {
    status: 403,
    meaning:
      "The credential lacks the permission (read_only key, API key on an admin route) or a media link's signature is bad or expired.",
  },
  WRONG_PASSWORD: { status: 403, meaning: "The current password given to change it is wrong." },
  PASSWORD_CHANGE_REQUIRED: {
    status: 403,
    meaning:
      "The session was opened with a one-time password: it may only choose a new one (PUT /v1/auth/password), see who it is, or sign out.",
  },

  // 404: nothing by that id in the caller's account (another account's resource is a 404, never a 403).
  NOT_FOUND: {
    status: 404,
    meaning: "No such route, account, file or thumbnail (a resource without a code of its own).",
  },
  COLLECTION_NOT_FOUND: { status: 404, meaning: "No collection with that id (or name) in this account." },
  VIDEO_NOT_FOUND: { status: 404, meaning: "No video with that id in this account." },
  USER_NOT_FOUND: { status: 404, meaning: "No user with that id or e-mail in this account." },
  JOB_NOT_FOUND: { status: 404, meaning: "No job with that id in this account." },
  API_KEY_NOT_FOUND: { status: 404, meaning: "No API key with that id in this account." },
  WEBHOOK_NOT_FOUND: { status: 404, meaning: "No webhook endpoint with that id in this account." },
  DELIVERY_NOT_FOUND: { status: 404, meaning: "No delivery with that id for this webhook endpoint." },
  MODEL_NOT_FOUND: {
    status: 404,
    meaning: "The model is not installed, or neither the built-in list nor the mirror knows it.",
  },

  // 405
  METHOD_NOT_ALLOWED: {
    status: 405,
    meaning: "The path exists but not with this method; the Allow header lists them.",
  },

  // 409: the request is valid but the current state does not allow it.
  COLLECTION_NAME_TAKEN: { status: 409, meaning: "This account already has a collection by that name." },
  API_KEY_ALREADY_REVOKED: { status: 409, meaning: "The API key was already revoked." },
  EMAIL_TAKEN: { status: 409, meaning: "A user with that e-mail already exists." },
  LAST_ADMIN: {
    status: 409,
    meaning: "The account's last admin cannot be removed or made a member; make someone else an admin first.",
  },
  DUPLICATE_CONTENT: {
    status: 409,
    meaning: "This collection already holds a file with the same content; the message names the video.",
  },
  VIDEO_NOT_READY: { status: 409, meaning: "The video is not probed or indexed yet; retry once its job has finished." },
  DECODE_FAILED: { status: 409, meaning: "No frame could be decoded from the video at that time." },
  JOB_NOT_RETRYABLE: { status: 409, meaning: "Only a failed job can be retried." },
  WEBHOOK_INACTIVE: { status: 409, meaning: "The webhook endpoint is inactive; activate it first." },
  DELIVERY_NOT_FAILED: { status: 409, meaning: "Only a failed delivery can be retried." },
  MODELS_BUSY: {
    status: 409,
    meaning: "Another models command is changing the models folder; retry when it has finished.",
  },
  MODEL_FILES_CHANGED: {
    status: 409,
    meaning:
      "An installed model's files no longer match what was recorded when it was installed; run `vsearch models verify`, then re-import or pull it.",
  },
  MODEL_VERIFY_FAILED: { status: 409, meaning: "`vsearch models verify` found models whose files do not match." },
  SERVER_RUNNING: {
    status: 409,
    meaning: "A `vsearch serve` is using the data dir (or, on PostgreSQL, the database); stop it first.",
  },
  BACKUP_WRONG_STORE: {
    status: 409,
    meaning:
      "The backup was made on the other store (embedded SQLite or PostgreSQL) than this install uses; the message says how to move it (`vsearch migrate-store`, pg_restore).",
  },
  BACKUP_ROWS_MISSING: {
    status: 409,
    meaning:
      "Restoring a PostgreSQL-mode backup needs its rows in the database first: restore the pg_dump with pg_restore, then run `vsearch restore` again.",
  },
  DATA_DIR_NOT_EMPTY: {
    status: 409,
    meaning: "Restore needs an empty folder; pass --force to replace what is there.",
  },

  // 413 / 415
  PAYLOAD_TOO_LARGE: { status: 413, meaning: "The request body is over the route's cap." },
  UPLOAD_TOO_LARGE: { status: 413, meaning: "The file is over the upload limit (max_upload_bytes)." },
  UNSUPPORTED_FORMAT: { status: 415, meaning: "The file is empty or not a video in a supported container." },
  VIDEO_TOO_LARGE: {
    status: 415,
    meaning: "The video's frames are larger than max_video_pixels (default 8K); it is not decoded.",
  },

  // 422 in the code shape: only the CLI's restore (request bodies use the `detail[]` shape).
  BACKUP_INVALID: {
    status: 422,
    meaning: "The archive is not a complete, readable vsearch backup; nothing was restored.",
  },

  // 429
  RATE_LIMIT_EXCEEDED: {
    status: 429,
    meaning: "Too many requests for this credential and route group; see Retry-After.",
  },
  QUEUE_FULL: {
    status: 429,
    meaning:
      "The account has its cap of uploads waiting to be indexed (`queue_account_max_waiting`); see Retry-After. Nothing was stored.",
  },

  // 499: logged and counted only; the client has gone.
  CLIENT_CLOSED_REQUEST: { status: 499, meaning: "The client closed the connection before the request was complete." },

  // 5xx
  INTERNAL_ERROR: {
    status: 500,
    meaning: "Unexpected error; the server log has it under the request id (never a stack trace to the client).",
  },
  MODEL_REGISTRY_INVALID: {
    status: 500,
    meaning: "The models registry file is corrupt; restore it from a backup or re-import the models.",
  },
  MODEL_DOWNLOAD_FAILED: {
    status: 502,
    meaning: "The model server refused or failed the download; retrying will not help.",
  },
  MODEL_DOWNLOAD_INTERRUPTED: {
    status: 502,
    meaning: "The model download broke off (network, 5xx, 429); what arrived is kept: run the same pull to resume.",
  },
  MODEL_NOT_INSTALLED: {
    status: 503,
    meaning: "A model the request needs is not installed; the message says how to add it.",
  },
  SERVER_BUSY: {
    status: 503,
    meaning: "Too many clip exports or frame grabs of all accounts are waiting; see Retry-After.",
  },
  MEDIA_STORE_UNAVAILABLE: {
    status: 503,
    meaning:
      "The media's object store (s3_bucket) failed or cannot be reached; an upload that meets it stores nothing, a background task that meets it runs again later. See Retry-After.",
  },
  SEARCH_UNAVAILABLE: {
    status: 503,
    meaning:
      "Search cannot answer right now (index loading after a restart, model failure, shutting down); see Retry-After.",
  },
  TIMEOUT: {
    status: 504,
    meaning: "An agent tool call ran past agent_call_timeout_secs and was stopped.",
  },
  INSUFFICIENT_STORAGE: {
    status: 507,
    meaning: "The server's disk is full; nothing was written. Reads still work; retry once space is freed.",
  },
} as const satisfies Record<string, ErrorCodeEntry>;

/** A code of the catalogue; anything else does not compile. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The status `code` is always answered with. */
export const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;

export const isErrorCode = (s: string): s is ErrorCode => Object.hasOwn(ERROR_CODES, s);
