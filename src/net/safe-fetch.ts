import http from "node:http";
import https from "node:https";
import type { ClientRequest, IncomingMessage } from "node:http";
import type { LookupAddress } from "node:dns";
import { checkTarget, CidrAllowList, type CheckedTarget, type IpAddress, type Resolver } from "./address-rules.ts";
import { NetError } from "./errors.ts";

/**
 * Outbound HTTP for webhook delivery and `image_url` (SPEC §6–7), built on the address rules.
 *
 * How the checked address is pinned: `node:http`/`node:https` `request()` with a `lookup` function
 * that answers only with the addresses `checkTarget` approved, so the name is resolved exactly once
 * and there is no window for DNS rebinding. Under Bun 1.4.5 (checked with a decoy server on
 * 127.0.0.1 and the real one on 127.0.0.2, see test/net/safe-fetch.test.ts) this:
 *   - calls `lookup(host, { all: true })` and connects only to what it answers; it only accepts the
 *     array answer — the scalar `(err, address, family)` callback fails with ERR_INVALID_IP_ADDRESS —
 *     so `pinnedLookup` answers in whichever form was asked for;
 *   - sends SNI and checks the certificate against `servername` (the URL's hostname), not the IP;
 *   - never follows redirects (node:http has no redirect logic), ignores HTTP(S)_PROXY (Bun's
 *     `fetch` honours those even for IP URLs, and `proxy: ""` does not switch that off), and with
 *     `agent: false` opens a fresh connection per request, so no pooled socket set up for another
 *     name/address is reused.
 */

export interface SafeFetchOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Networks opened for non-public targets (CIDR list); default none. */
  allowNetworks?: CidrAllowList | string | readonly string[];
  /** Limit for the whole exchange: resolve, connect, TLS, response headers and body. Default 10 s. */
  timeoutMs?: number;
  /** Largest body kept. Default 1 MiB. */
  maxResponseBytes?: number;
  /**
   * What a body over `maxResponseBytes` does: `"error"` (default) fails with RESPONSE_TOO_LARGE —
   * right for `image_url`, where a partial image is useless; `"truncate"` returns the first
   * `maxResponseBytes` with `truncated: true` — right for webhook deliveries, which keep a prefix of
   * the receiver's answer. Either way the connection is closed as soon as the limit is passed.
   */
  onOversize?: "error" | "truncate";
  /** Name resolver; the system's by default. Called once per request. */
  resolve?: Resolver;
  /** Extra trust anchors for https (an on-prem private CA; tests). System roots stay in use otherwise. */
  ca?: string | Uint8Array | ReadonlyArray<string | Uint8Array>;
  /** Cancels the request (code ABORTED), e.g. on shutdown. */
  signal?: AbortSignal;
}

export interface SafeFetchResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Uint8Array;
  truncated: boolean;
  /** The address the connection went to (one of `target.addresses`). */
  remoteAddress: string | null;
  target: CheckedTarget;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * Reads a byte stream into one buffer, keeping at most `maxBytes`. Stops reading (which closes a
 * node stream or cancels a web stream) as soon as the limit is passed, so an endless or huge body
 * costs at most one chunk more than the limit. `truncated` is true only if bytes were dropped.
 */
export async function readBodyLimited(
  source: AsyncIterable<Uint8Array | string>,
  maxBytes: number,
): Promise<{ body: Uint8Array; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for await (const raw of source) {
    const chunk = typeof raw === "string" ? new TextEncoder().encode(raw) : raw;
    if (size + chunk.byteLength > maxBytes) {
      chunks.push(chunk.subarray(0, maxBytes - size));
      size = maxBytes;
      truncated = true;
      break;
    }
    chunks.push(chunk);
    size += chunk.byteLength;
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    body.set(c, offset);
    offset += c.byteLength;
  }
  return { body, truncated };
}

/**
 * A `lookup` for node:http that only ever answers with the checked addresses, whatever name it is
 * asked about, in the array form when `all` is set (the only form Bun 1.4.5 accepts) and the
 * scalar form otherwise (what Node asks for without autoSelectFamily).
 */
export function pinnedLookup(addresses: readonly IpAddress[]) {
  return (
    _hostname: string,
    options: { all?: boolean; family?: number | string } | number | undefined,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    const opts = typeof options === "object" && options !== null ? options : { family: options };
    const family = opts.family === "IPv4" ? 4 : opts.family === "IPv6" ? 6 : Number(opts.family ?? 0);
    const usable = addresses.filter((a) => (family !== 4 && family !== 6 ? true : a.family === family));
    process.nextTick(() => {
      if (usable.length === 0) {
        const err: NodeJS.ErrnoException = new Error(`no checked address of family ${family}`);
        err.code = "ENOTFOUND";
        callback(err, opts.all ? [] : "", undefined);
      } else if (opts.all) {
        callback(
          null,
          usable.map((a) => ({ address: a.text, family: a.family })),
        );
      } else {
        callback(null, usable[0].text, usable[0].family);
      }
    });
  };
}

const CONNECT_CODES = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EADDRNOTAVAIL",
  "ETIMEDOUT",
  "ENOTFOUND",
  "ConnectionRefused",
]);

function isTlsCode(code: string): boolean {
  return (
    /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|ERR_OSSL_)/.test(code) ||
    ["DEPTH_ZERO_SELF_SIGNED_CERT", "SELF_SIGNED_CERT_IN_CHAIN", "HOSTNAME_MISMATCH", "EPROTO"].includes(code)
  );
}

/** Turns whatever a socket or parser threw into a NetError with a code; keeps the original as cause. */
function toNetError(err: unknown, gotResponse: boolean, target: CheckedTarget): NetError {
  if (err instanceof NetError) return err;
  const code = String((err as { code?: unknown })?.code ?? "");
  const detail = err instanceof Error ? err.message : String(err);
  const where = `${target.hostname}:${target.port}`;
  if (isTlsCode(code)) return new NetError("TLS_FAILED", `TLS with ${where} failed: ${detail}`, { cause: err });
  if (!gotResponse && CONNECT_CODES.has(code)) {
    return new NetError("CONNECT_FAILED", `could not connect to ${where}: ${detail}`, {
      cause: err,
      address: target.address.text,
    });
  }
  return new NetError("REQUEST_FAILED", `request to ${where} failed: ${detail}${code ? ` (${code})` : ""}`, {
    cause: err,
  });
}

function flattenHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/** Rejects with the signal's reason as soon as it aborts; the inner promise's own outcome is then ignored. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

function positiveInt(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  return Math.floor(value);
}

/**
 * One HTTP request to a checked target. Refusals happen before any socket is opened; the
 * connection goes only to the addresses that were checked; 3xx responses come back as they are.
 * Always resolves to a response or rejects with a `NetError`.
 */
export async function safeFetch(url: string | URL, options: SafeFetchOptions = {}): Promise<SafeFetchResponse> {
  const timeoutMs = positiveInt("timeoutMs", options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const maxBytes = positiveInt("maxResponseBytes", options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
  const onOversize = options.onOversize ?? "error";
  // Parsed up front so a bad operator list fails as the configuration error it is (RangeError).
  const allowNetworks = CidrAllowList.from(options.allowNetworks);
  if (options.signal?.aborted) throw new NetError("ABORTED", "the request was cancelled");

  // One controller carries both the deadline and the caller's cancel; its reason is the NetError.
  const stop = new AbortController();
  const timer = setTimeout(
    () => stop.abort(new NetError("TIMEOUT", `no complete response within ${timeoutMs} ms`)),
    timeoutMs,
  );
  const onCallerAbort = () => stop.abort(new NetError("ABORTED", "the request was cancelled"));
  options.signal?.addEventListener("abort", onCallerAbort, { once: true });

  let req: ClientRequest | undefined;
  const destroy = () => req?.destroy();
  stop.signal.addEventListener("abort", destroy, { once: true });

  try {
    const target = await untilAborted(checkTarget(url, { allowNetworks, resolve: options.resolve }), stop.signal);
    let gotResponse = false;
    try {
      const res = await untilAborted(
        new Promise<IncomingMessage>((resolve, reject) => {
          req = startRequest(target, options);
          req.once("response", resolve);
          // `on`, not `once`: a destroyed request may emit more than one error, and an 'error'
          // without a listener would crash the process. Later calls to reject are no-ops.
          req.on("error", reject);
          req.end(options.body);
        }),
        stop.signal,
      );
      gotResponse = true;
      // Read now: once the body has been consumed the socket is detached from the response.
      const remoteAddress = res.socket?.remoteAddress ?? req!.socket?.remoteAddress ?? null;
      // Errors while reading reach us through the body iterator; this listener only keeps one that
      // fires when nobody iterates (e.g. after an early RESPONSE_TOO_LARGE) from being unhandled.
      res.on("error", () => {});

      const declared = Number(res.headers["content-length"]);
      if (onOversize === "error" && Number.isFinite(declared) && declared > maxBytes) {
        throw new NetError("RESPONSE_TOO_LARGE", `response body of ${declared} bytes exceeds ${maxBytes}`);
      }
      const { body, truncated } = await untilAborted(readBodyLimited(res, maxBytes), stop.signal);
      if (truncated && onOversize === "error") {
        throw new NetError("RESPONSE_TOO_LARGE", `response body exceeds ${maxBytes} bytes`);
      }
      return {
        status: res.statusCode ?? 0,
        headers: flattenHeaders(res),
        body,
        truncated,
        remoteAddress,
        target,
      };
    } catch (err) {
      throw stop.signal.aborted ? stop.signal.reason : toNetError(err, gotResponse, target);
    }
  } catch (err) {
    if (stop.signal.aborted) throw stop.signal.reason;
    throw err;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onCallerAbort);
    stop.signal.removeEventListener("abort", destroy);
    // Done reading (or gave up): never leave the socket open for the rest of a huge body.
    req?.destroy();
  }
}

function startRequest(target: CheckedTarget, options: SafeFetchOptions): ClientRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    const lower = name.toLowerCase();
    // Host names the checked URL, never something the caller chose; length is computed from body.
    if (lower === "host" || lower === "content-length") continue;
    headers[name] = value;
  }
  headers.host = target.url.host;
  if (options.body !== undefined) {
    headers["content-length"] = String(
      typeof options.body === "string" ? Buffer.byteLength(options.body) : options.body.byteLength,
    );
  }
  const common = {
    // For a name: the name, so node:http asks our lookup (and sends SNI / checks the cert for it).
    // For a literal: the checked address itself; no lookup happens.
    host: target.isName ? target.hostname : target.address.text,
    port: target.port,
    path: `${target.url.pathname}${target.url.search}`,
    method: (options.method ?? "GET").toUpperCase(),
    headers,
    agent: false as const,
    lookup: pinnedLookup(target.addresses) as never,
  };
  try {
    if (target.protocol === "https:") {
      return https.request({
        ...common,
        // SNI must be a name, never an IP (RFC 6066 §3); the trailing dot of an absolute name is dropped.
        servername: target.isName ? target.hostname.replace(/\.$/, "") : undefined,
        // Explicit, so NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment cannot turn checking off.
        rejectUnauthorized: true,
        ca: options.ca as never,
      });
    }
    return http.request(common);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw new NetError("INVALID_REQUEST", `the request cannot be sent: ${detail}`, { cause: err });
  }
}
