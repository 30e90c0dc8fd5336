/**
 * Early answers reach a client that is still sending (issue 20): a 413 over the upload limit, a
 * 401 on an upload, a JSON body over its cap — answered before the body ended — are read in full
 * by a raw socket that goes on writing megabytes after the answer, and a client that never stops
 * is cut off after the linger bound (src/http/serve-options.ts). Real Bun.serve on 127.0.0.1.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EARLY_ANSWER_LINGER_SECS } from "../../src/http/serve-options.ts";
import { createTenant, json } from "../helpers/app.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { until } from "../helpers/wait.ts";

const MiB = 1024 * 1024;
const LIMIT = MiB;
/** Past the point where the server answers (the limit, or nothing for a 401), the client writes this much more. */
const AFTER_ANSWER = 2 * MiB + 64 * 1024;
const TRIES = 20;

let s: TestServer;
let key: string;
let col: string;

beforeAll(async () => {
  s = await startTestServer({
    VSEARCH_MAX_UPLOAD_BYTES: String(LIMIT),
    VSEARCH_RATE_LIMIT_UPLOAD: "100000",
    VSEARCH_RATE_LIMIT_COLLECTIONS_WRITE: "100000",
  });
  key = (await createTenant(s)).key;
  col = (
    await json(
      await s.http("/v1/collections", {
        method: "POST",
        token: key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "early" }),
      }),
    )
  ).data.id;
});
afterAll(() => s.close());

interface Answer {
  status: number;
  body: any;
  /** Bytes of the answer read (0: the answer was lost). */
  bytes: number;
  /** The socket error, if any (ECONNRESET, EPIPE…). */
  error: string | null;
}

/** Status and JSON body once a whole response (Content-Length) is in `buf`; null before. */
function parseAnswer(buf: Buffer): { status: number; body: any } | null {
  const head = buf.indexOf("\r\n\r\n");
  if (head < 0) return null;
  const lines = buf.subarray(0, head).toString("latin1").split("\r\n");
  const length = Number(/^content-length:\s*(\d+)$/im.exec(lines.join("\n"))?.[1] ?? NaN);
  if (!Number.isFinite(length) || buf.length < head + 4 + length) return null;
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0])?.[1] ?? 0);
  return { status, body: JSON.parse(buf.subarray(head + 4, head + 4 + length).toString("utf8")) };
}

const chunked = (bytes: Uint8Array) =>
  Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from("\r\n")]);

/** Writes `data` in 64 KiB pieces, waiting whenever the socket buffer is full. */
async function writeAll(sock: Socket, data: Buffer): Promise<void> {
  for (let at = 0; at < data.length; at += 64 * 1024) {
    if (!sock.write(data.subarray(at, at + 64 * 1024))) {
      await new Promise<void>((resolve, reject) => {
        sock.once("drain", resolve);
        sock.once("error", reject);
      });
    }
  }
}

/**
 * How a script or a simple HTTP library sends: the whole request first — headers, then `body`,
 * megabytes past the point where the server answers — half-closes its side, and only then reads.
 * Reading is paused meanwhile, so the answer waits in the kernel: a reset from the server
 * destroys it there (the "broken pipe, 0 bytes" of the issue).
 */
function sendAllThenRead(head: string, body: Buffer): Promise<Answer> {
  return new Promise((resolve) => {
    const sock = connect({ port: s.port, host: "127.0.0.1" });
    sock.pause();
    let buf = Buffer.alloc(0);
    let error: string | null = null;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const parsed = parseAnswer(buf);
      resolve({ status: parsed?.status ?? 0, body: parsed?.body ?? null, bytes: buf.length, error });
    };
    const timer = setTimeout(settle, 20_000);
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (parseAnswer(buf)) settle();
    });
    sock.on("error", (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
      settle();
    });
    sock.on("end", settle);
    sock.on("connect", async () => {
      try {
        sock.write(head);
        await writeAll(sock, body);
        sock.end();
      } catch {
        // A write failed (reset): the answer, if any, is still read below.
      }
      sock.resume();
    });
  });
}

function multipartHead(boundary: string): Buffer {
  return Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${col}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\n` +
      "Content-Type: video/mp4\r\n\r\n",
  );
}
const upload = (headers: string) =>
  `POST /v1/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: multipart/form-data; boundary=b\r\n`;

/** Each early answer, TRIES times in a row: every try must read the whole documented JSON. */
async function expectEveryTryAnswered(send: () => Promise<Answer>, status: number, code: string) {
  const outcomes: Answer[] = [];
  for (let i = 0; i < TRIES; i++) outcomes.push(await send());
  const lost = outcomes.filter((o) => o.status !== status || o.body?.detail?.code !== code);
  expect(
    lost.map((o) => `status ${o.status}, ${o.bytes} bytes read, ${o.error ?? "no socket error"}`),
    `${lost.length} of ${TRIES} tries lost the ${status} ${code}`,
  ).toEqual([]);
}

describe("an early answer reaches a client that is still sending", () => {
  test("413 on a declared upload over the limit (curl -F file=@big.mp4)", async () => {
    const body = Buffer.concat([multipartHead("b"), Buffer.alloc(AFTER_ANSWER, 7)]);
    await expectEveryTryAnswered(
      () =>
        sendAllThenRead(`${upload(`Authorization: Bearer ${key}\r\n`)}Content-Length: ${10 * 1024 ** 3}\r\n\r\n`, body),
      413,
      "UPLOAD_TOO_LARGE",
    );
  });

  test("413 found while streaming an upload (chunked, no length)", async () => {
    const body = Buffer.concat([
      chunked(multipartHead("b")),
      ...Array.from({ length: (LIMIT + AFTER_ANSWER) / (64 * 1024) + 1 }, () => chunked(Buffer.alloc(64 * 1024, 7))),
      Buffer.from("0\r\n\r\n"),
    ]);
    await expectEveryTryAnswered(
      () => sendAllThenRead(`${upload(`Authorization: Bearer ${key}\r\n`)}Transfer-Encoding: chunked\r\n\r\n`, body),
      413,
      "UPLOAD_TOO_LARGE",
    );
  });

  test("401 on an upload without credentials", async () => {
    // Declared at the most the server takes (upload limit + 1 MiB framing; more is a 413 first).
    const body = Buffer.concat([multipartHead("b"), Buffer.alloc(LIMIT + MiB - multipartHead("b").length, 7)]);
    await expectEveryTryAnswered(
      () => sendAllThenRead(`${upload("")}Content-Length: ${body.length}\r\n\r\n`, body),
      401,
      "UNAUTHORIZED",
    );
  });

  test("413 on a JSON body over its 1 MiB cap (chunked: found while reading)", async () => {
    const text = Buffer.from(JSON.stringify({ name: "x".repeat(LIMIT + AFTER_ANSWER) }));
    const body = Buffer.concat([
      ...Array.from({ length: Math.ceil(text.length / (64 * 1024)) }, (_, i) =>
        chunked(text.subarray(i * 64 * 1024, (i + 1) * 64 * 1024)),
      ),
      Buffer.from("0\r\n\r\n"),
    ]);
    await expectEveryTryAnswered(
      () =>
        sendAllThenRead(
          `POST /v1/collections HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
          body,
        ),
      413,
      "PAYLOAD_TOO_LARGE",
    );
  });
});

describe("the server does not read an answered body forever", () => {
  test("a client that goes on sending (10 GiB declared) reads the 413, then is cut off", async () => {
    const r = await new Promise<{ answer: ReturnType<typeof parseAnswer>; cutAfterMs: number | null; sent: number }>(
      (resolve) => {
        const sock = connect({ port: s.port, host: "127.0.0.1" });
        let buf = Buffer.alloc(0);
        let requestSentAt = 0;
        let sent = 0;
        let done = false;
        const finish = (cut: boolean) => {
          if (done) return;
          done = true;
          clearInterval(pump);
          clearTimeout(deadline);
          sock.destroy();
          resolve({ answer: parseAnswer(buf), cutAfterMs: cut ? Date.now() - requestSentAt : null, sent });
        };
        sock.on("data", (d: Buffer) => (buf = Buffer.concat([buf, d])));
        sock.on("error", () => finish(true));
        sock.on("end", () => finish(true));
        sock.write(`${upload(`Authorization: Bearer ${key}\r\n`)}Content-Length: ${10 * 1024 ** 3}\r\n\r\n`, () => {
          requestSentAt = Date.now();
        });
        // Paced at ~13 MB/s so the test costs little CPU; the server sees a client that never pauses long.
        const piece = Buffer.alloc(64 * 1024, 7);
        const pump = setInterval(() => {
          if (sock.writableLength < 4 * MiB) {
            sock.write(piece);
            sent += piece.length;
          }
        }, 5);
        // Without the bound Bun reads the 10 GiB to the end: at this pace, not within the deadline.
        const deadline = setTimeout(() => finish(false), 45_000);
      },
    );
    expect(r.answer).toMatchObject({ status: 413, body: { detail: { code: "UPLOAD_TOO_LARGE" } } });
    expect(r.cutAfterMs, `still connected 45 s after the request, ${r.sent} bytes sent`).not.toBeNull();
    // Never before the bound: the server set it after the request arrived, and Bun's 4 s ticks
    // leave at least EARLY_ANSWER_LINGER_SECS − 4 s (serve-options.ts). No upper bound beyond the
    // deadline: under load the cut comes late, never early.
    expect(r.cutAfterMs!).toBeGreaterThan((EARLY_ANSWER_LINGER_SECS - 4) * 1000);
  }, 60_000);

  test("a body that ends in time leaves a normal keep-alive connection (no bound on the next request)", async () => {
    const sock = connect({ port: s.port, host: "127.0.0.1" });
    let buf = Buffer.alloc(0);
    sock.on("data", (d: Buffer) => (buf = Buffer.concat([buf, d])));
    const closed = new Promise<void>((resolve) => sock.on("close", () => resolve()));
    try {
      await new Promise<void>((resolve) => sock.on("connect", () => resolve()));
      const body = Buffer.alloc(MiB / 2, 7);
      sock.write(`${upload("")}Content-Length: ${body.length}\r\n\r\n`);
      await writeAll(sock, body);
      expect(await until(async () => parseAnswer(buf) !== null, 20_000)).toBe(true);
      expect(parseAnswer(buf)?.status).toBe(401);
      buf = Buffer.alloc(0);
      // The next request on the same connection sends its body slowly, for longer than the bound:
      // it is answered, not cut.
      const json = Buffer.from(JSON.stringify({ name: "slow" }));
      sock.write(
        `POST /v1/collections HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
          "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      );
      const pieces = (EARLY_ANSWER_LINGER_SECS + 2) * 2;
      for (let i = 0; i < pieces; i++) {
        const part = json.subarray(
          Math.floor((i * json.length) / pieces),
          Math.floor(((i + 1) * json.length) / pieces),
        );
        if (part.length) sock.write(chunked(part));
        await Bun.sleep(500);
      }
      sock.write("0\r\n\r\n");
      expect(await until(async () => parseAnswer(buf) !== null, 20_000)).toBe(true);
      expect(parseAnswer(buf)).toMatchObject({ status: 201, body: { data: { name: "slow" } } });
    } finally {
      sock.destroy();
      await closed;
    }
  }, 60_000);
});
