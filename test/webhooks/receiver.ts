import { createHmac, timingSafeEqual } from "node:crypto";

export interface Hit {
  headers: Record<string, string>;
  raw: string;
  body: any;
  signatureOk: boolean;
}

/**
 * A real HTTP receiver on a loopback port. `respond(n)` decides the status of the n-th request
 * (1-based). It verifies X-Service-Signature over the exact raw bytes with `secret` once known.
 */
export function startReceiver(respond: (n: number) => number | Response = () => 200) {
  const hits: Hit[] = [];
  const state = { secret: "" };
  const handle = async (req: Request): Promise<Response> => {
    const raw = await req.text();
    const sig = req.headers.get("x-service-signature") ?? "";
    const want = `sha256=${createHmac("sha256", state.secret).update(raw).digest("hex")}`;
    const signatureOk = sig.length === want.length && timingSafeEqual(Buffer.from(sig), Buffer.from(want));
    let body: any = null;
    try {
      body = JSON.parse(raw);
    } catch {}
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => (headers[k] = v));
    hits.push({ headers, raw, body, signatureOk });
    const r = respond(hits.length);
    return typeof r === "number" ? new Response(`status ${r}`, { status: r }) : r;
  };
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handle });
  return {
    url: `http://127.0.0.1:${server.port}/hook`,
    hits,
    /** Records and answers a request (for wrappers that delay or hold the answer). */
    handle,
    setSecret: (s: string) => (state.secret = s),
    stop: () => server.stop(true),
  };
}
