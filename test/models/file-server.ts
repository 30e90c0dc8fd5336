/** What the fake mirror and the fake hub (and its CDN) share: loopback servers answering file reads as a real one would. */

/**
 * A Bun.serve on 127.0.0.1 at a free port. A handler that throws answers 500 quietly: the dropped
 * connections these servers make on purpose are the point of the tests, not faults worth printing.
 */
export function serveLoopback(fetch: (req: Request) => Response) {
  return Bun.serve({ hostname: "127.0.0.1", port: 0, error: () => new Response("error", { status: 500 }), fetch });
}

export interface RangedOptions {
  /** Sent with the 200/206 (Content-Range is added for a 206). */
  headers?: Record<string, string>;
  /** Asked only once the range is known to be servable: true → half the bytes, then the connection drops. */
  cut?: () => boolean;
  /** Likewise: true → half the bytes, then nothing more with the connection left open. */
  stall?: () => boolean;
  /** Named in the error that drops a cut connection. */
  who: string;
}

/** `data` from the offset of a `Range: bytes=N-` header (206), or whole (200); 416 when N is past the end. */
export function rangedResponse(req: Request, data: Uint8Array, opts: RangedOptions): Response {
  const range = req.headers.get("range");
  let start = 0;
  if (range) {
    const m = range.match(/^bytes=(\d+)-$/);
    start = m ? Number(m[1]) : 0;
    if (start >= data.length)
      return new Response(null, { status: 416, headers: { "content-range": `bytes */${data.length}` } });
  }
  const headers: Record<string, string> = {
    ...opts.headers,
    ...(start > 0 ? { "content-range": `bytes ${start}-${data.length - 1}/${data.length}` } : {}),
  };
  const status = start > 0 ? 206 : 200;
  if (opts.cut?.()) {
    const half = data.subarray(start, start + Math.floor((data.length - start) / 2));
    const body = new ReadableStream({
      start(c) {
        c.enqueue(half);
        setTimeout(() => c.error(new Error(`${opts.who} test: connection dropped`)), 20);
      },
    });
    return new Response(body, { status, headers });
  }
  if (opts.stall?.()) {
    const half = data.subarray(start, start + Math.floor((data.length - start) / 2));
    return new Response(new ReadableStream({ start: (c) => c.enqueue(half) }), { status, headers });
  }
  return new Response(data.subarray(start) as Uint8Array<ArrayBuffer>, { status, headers });
}
