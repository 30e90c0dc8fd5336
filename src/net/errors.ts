/**
 * Errors of the outbound HTTP layer. Every failure of `checkTarget` / `safeFetch` is a `NetError`
 * with a stable `code`, so webhook delivery can record it and search can turn it into a 422 without
 * parsing messages or seeing raw socket errors.
 */
export type NetErrorCode =
  /** The URL does not parse, or its host is not a valid name or address. */
  | "INVALID_URL"
  /** Scheme other than http/https, credentials in the URL, or an address the rules refuse. */
  | "TARGET_FORBIDDEN"
  /** The name did not resolve (or resolved to nothing usable). */
  | "DNS_FAILED"
  /** No TCP connection could be made to any checked address. */
  | "CONNECT_FAILED"
  /** The TLS handshake or the certificate check (on the URL's hostname) failed. */
  | "TLS_FAILED"
  /** The whole exchange (resolve + connect + response + body) exceeded `timeoutMs`. */
  | "TIMEOUT"
  /** The body exceeded `maxResponseBytes` and the caller asked for an error rather than a prefix. */
  | "RESPONSE_TOO_LARGE"
  /** The connection broke or the response was malformed after the connection was made. */
  | "REQUEST_FAILED"
  /** The caller's request itself is unusable (bad method or header value). */
  | "INVALID_REQUEST"
  /** The caller's AbortSignal fired. */
  | "ABORTED";

export class NetError extends Error {
  constructor(
    readonly code: NetErrorCode,
    message: string,
    readonly details: {
      /** For TARGET_FORBIDDEN: why (`loopback`, `ipv4-mapped-private`, `scheme`, `credentials`, …). */
      reason?: string;
      /** The address that was refused or could not be reached, where there is one. */
      address?: string;
      cause?: unknown;
    } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "NetError";
  }

  get reason(): string | undefined {
    return this.details.reason;
  }

  get address(): string | undefined {
    return this.details.address;
  }
}
