import fc from "fast-check";
import { JsonShapeMeter, jsonDepth, jsonShape } from "../../src/http/body-guard.ts";
import { parseRange } from "../../src/media-serving/range.ts";
import { classifyAddress, parseIp as parseRuleIp, parseIPv4 } from "../../src/net/address-rules.ts";
import { ClientAddressResolver } from "../../src/http/client-address.ts";
import { UrlSigner } from "../../src/signing/url-signer.ts";
import { MultipartError, readMultipart } from "../../src/upload/multipart-stream.ts";
import { FairScheduler } from "../../src/core/fair-scheduler.ts";
import { AppError } from "../../src/core/errors.ts";

/**
 * Properties of the hostile-input surface (issue 9), shared by the CI suite
 * (test/security/properties.test.ts, a few hundred runs each) and bench/properties.ts (10⁵).
 * Each takes the number of runs; each throws (fast-check's report) on a counterexample.
 */

const streamOf = (chunks: Uint8Array[]) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (const ch of chunks) c.enqueue(ch);
      c.close();
    },
  });

/** Cuts `bytes` at the given fractions: the same body arriving in arbitrary chunks. */
function chunked(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((f) => Math.floor(f * bytes.length)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const c of [...at, bytes.length]) {
    if (c > prev) out.push(bytes.slice(prev, c));
    prev = Math.max(prev, c);
  }
  return out;
}

async function parseAll(chunks: Uint8Array[], boundary: string) {
  const parts: { name: string; filename: string | null; data: number[] }[] = [];
  await readMultipart(streamOf(chunks), boundary, {
    onPartStart: (p) => void parts.push({ name: p.name, filename: p.filename, data: [] }),
    onPartData: (d) => void parts.at(-1)!.data.push(...d),
    onPartEnd: () => {},
  });
  return parts;
}

const fieldName = fc.stringMatching(/^[a-z_]{1,12}$/);
const boundaryArb = fc.stringMatching(/^[A-Za-z0-9'()+_,-./:=?]{1,40}$/).filter((b) => !b.endsWith(" "));
/** Text built from the multipart grammar's own pieces, so random input reaches deep states. */
const multipartNoise = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        "%",
        "%ZZ",
        "%C3%A9",
        "%C3",
        "\r\n",
        "\r\n\r\n",
        "--b",
        "--b--",
        "\r\n--b\r\n",
        '"',
        ";",
        " name=",
        'name="f"',
        "filename=",
        "filename*=UTF-8''",
        "Content-Disposition: form-data",
        ":",
      ),
      fc.string({ maxLength: 8 }),
    ),
    { maxLength: 40 },
  )
  .map((a) => a.join(""));
const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 });

export const properties: Record<string, (runs: number) => Promise<void>> = {
  async "multipart: any bytes in any chunks → parts or a MultipartError, never another throw"(runs) {
    await fc.assert(
      fc.asyncProperty(multipartNoise, fc.boolean(), cuts, async (noise, framed, cutsAt) => {
        const prefix = framed ? "--b\r\nContent-Disposition: form-data; name=\"x\"; filename*=UTF-8''" : "";
        const body = new TextEncoder().encode(prefix + noise);
        try {
          await parseAll(chunked(body, cutsAt), "b");
        } catch (e) {
          if (!(e instanceof MultipartError)) throw e;
        }
      }),
      { numRuns: runs },
    );
  },

  async "multipart: a well-formed body parses to its parts however it is chunked"(runs) {
    const part = fc.record({
      name: fieldName,
      filename: fc.option(fc.stringMatching(/^[a-z0-9. ]{1,20}$/), { nil: null }),
      data: fc.uint8Array({ maxLength: 200 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(part, { minLength: 1, maxLength: 4 }),
        boundaryArb,
        cuts,
        async (parts, boundary, cutsAt) => {
          const enc = new TextEncoder();
          const bytes: number[] = [];
          for (const p of parts) {
            // A boundary inside the data would end the part there: such inputs are not well-formed.
            fc.pre(
              !Buffer.from(p.data).includes(`\r\n--${boundary}`) && !Buffer.from(p.data).includes(`--${boundary}`),
            );
            const fn = p.filename === null ? "" : `; filename="${p.filename}"`;
            bytes.push(
              ...enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${fn}\r\n\r\n`),
              ...p.data,
              ...enc.encode("\r\n"),
            );
          }
          bytes.push(...enc.encode(`--${boundary}--\r\n`));
          const got = await parseAll(chunked(Uint8Array.from(bytes), cutsAt), boundary);
          const want = parts.map((p) => ({ name: p.name, filename: p.filename, data: [...p.data] }));
          if (JSON.stringify(got) !== JSON.stringify(want))
            throw new Error(`parsed ${JSON.stringify(got)} want ${JSON.stringify(want)}`);
        },
      ),
      { numRuns: runs },
    );
  },

  async "Range: any header, any size → full, 416, or a range inside the file"(runs) {
    const header = fc.oneof(
      fc.string(),
      fc
        .tuple(fc.option(fc.nat(), { nil: undefined }), fc.option(fc.nat(), { nil: undefined }))
        .map(([a, b]) => `bytes=${a ?? ""}-${b ?? ""}`),
      fc.constantFrom("bytes=-0", "bytes=0-", "bytes=1-0", "BYTES=0-1", "bytes=0-1,2-3", "bytes=99999999999999999999-"),
    );
    await fc.assert(
      fc.property(header, fc.nat({ max: 1e12 }), (h, size) => {
        const r = parseRange(h, size);
        if (
          r.kind === "partial" &&
          !(Number.isSafeInteger(r.start) && r.start >= 0 && r.start <= r.end && r.end < size)
        ) {
          throw new Error(`range ${r.start}-${r.end} outside a ${size}-byte file`);
        }
        if (r.kind === "unsatisfiable" && size > 0 && !/^\s*bytes=/i.test(h))
          throw new Error("416 for a non-bytes header");
      }),
      { numRuns: runs },
    );
  },

  async "address rules: an IPv4 address and its IPv4-mapped IPv6 forms are refused alike"(runs) {
    await fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (v) => {
        const dotted = [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".");
        const hex = `${((v >>> 16) & 0xffff).toString(16)}:${(v & 0xffff).toString(16)}`;
        const four = classifyAddress(dotted) === "public";
        for (const form of [`::ffff:${dotted}`, `::ffff:${hex}`, `0:0:0:0:0:ffff:${dotted}`]) {
          if ((classifyAddress(form) === "public") !== four) throw new Error(`${form} classified unlike ${dotted}`);
        }
      }),
      { numRuns: runs },
    );
  },

  async "address rules: parsing any text never throws; what parses as IPv4 agrees with ipaddr.js"(runs) {
    const { default: ipaddr } = await import("ipaddr.js");
    await fc.assert(
      fc.property(fc.oneof(fc.string(), fc.ipV4(), fc.ipV6(), fc.ipV4Extended()), (s) => {
        const ours = parseRuleIp(s);
        if (ours) classifyAddress(ours);
        const four = parseIPv4(s);
        if (four !== null && ipaddr.IPv4.isValidFourPartDecimal(s)) {
          const theirs = ipaddr.IPv4.parse(s).toByteArray();
          const mine = [four >>> 24, (four >>> 16) & 255, (four >>> 8) & 255, four & 255];
          if (mine.join(".") !== theirs.join(".")) throw new Error(`${s}: ${mine} vs ${theirs}`);
        }
      }),
      { numRuns: runs },
    );
  },

  async "client address: X-Forwarded-For from an untrusted peer never changes who is counted"(runs) {
    const resolver = new ClientAddressResolver(["10.0.0.0/8"]);
    await fc.assert(
      fc.property(fc.ipV4(), fc.string(), (peer, xff) => {
        fc.pre(!peer.startsWith("10."));
        if (resolver.resolve(peer, xff) !== resolver.resolve(peer, null)) throw new Error(`${peer} + "${xff}" escaped`);
      }),
      { numRuns: runs },
    );
  },

  async "presigned URLs: only the signature the server made verifies; nothing throws"(runs) {
    const signer = new UrlSigner(
      Buffer.alloc(32, 7),
      () => "http://h",
      3600,
      () => 1_700_000_000_000,
    );
    const path = fc.stringMatching(/^\/media\/videos\/[A-Za-z0-9_]{1,24}\/(source|poster\.jpg)$/);
    await fc.assert(
      fc.property(
        path,
        fc.string(),
        fc.string(),
        fc.nat({ max: 63 }),
        fc.nat({ max: 15 }),
        (p, expires, signature, at, digit) => {
          const url = new URL(signer.sign(p));
          const e = url.searchParams.get("expires")!;
          const sig = url.searchParams.get("signature")!;
          if (signer.verify(p, e, sig) !== "ok") throw new Error("own signature refused");
          const flipped = sig.slice(0, at) + digit.toString(16) + sig.slice(at + 1);
          if (flipped !== sig && signer.verify(p, e, flipped) !== "bad") throw new Error("altered signature accepted");
          if (signer.verify(`${p}x`, e, sig) !== "bad") throw new Error("signature valid for another path");
          if (signer.verify(p, String(Number(e) + 1), sig) !== "bad")
            throw new Error("signature valid for another expiry");
          if (signer.verify(p, expires, signature) === "ok") throw new Error("random input verified");
        },
      ),
      { numRuns: runs },
    );
  },

  async "JSON depth: the guard's count equals the real nesting of any JSON value, on the text and on its UTF-8 bytes cut into any chunks"(
    runs,
  ) {
    const depthOf = (v: unknown): number =>
      v !== null && typeof v === "object" ? 1 + Math.max(0, ...Object.values(v as object).map(depthOf)) : 0;
    await fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 8 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 8 }),
        (v, cuts) => {
          const text = JSON.stringify(v);
          if (jsonDepth(text) !== depthOf(v)) throw new Error(`${text}: ${jsonDepth(text)} vs ${depthOf(v)}`);
          // As a body arrives: bytes in chunks cut anywhere (inside a string, an escape, a UTF-8 character).
          const bytes = new TextEncoder().encode(text);
          const meter = new JsonShapeMeter();
          for (let at = 0, i = 0; at < bytes.length; at += cuts[i++ % cuts.length] as number)
            meter.feed(bytes.subarray(at, at + (cuts[i % cuts.length] as number)));
          const whole = jsonShape(text);
          if (meter.depth !== whole.depth || meter.values !== whole.values)
            throw new Error(`${text}: chunked ${meter.depth}/${meter.values} vs ${whole.depth}/${whole.values}`);
        },
      ),
      { numRuns: runs },
    );
  },

  async "fair scheduler: at most `concurrency` run, each account's cap and the waiting cap hold, a free slot goes to the waiting account with the fewest running (ties in turn), nothing leaks"(
    runs,
  ) {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 6 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 24 }),
        fc.array(fc.nat(), { minLength: 24, maxLength: 24 }),
        async (concurrency, perAccount, maxWaiting, accounts, releaseOrder) => {
          const sched = new FairScheduler({
            what: "task",
            concurrency,
            perAccount,
            maxWaiting,
            busyCode: "SERVER_BUSY",
          });
          let peak = 0;
          let started = 0;
          const runningOf = new Map<number, number>();
          const waitingOf = new Map<number, number>();
          const admitted = new Map<number, number>();
          let refused = 0;
          const gates: { acct: number; open: () => void }[] = [];
          const all = accounts.map((acct) => {
            try {
              const p = sched.run(`a${acct}`, async () => {
                started++;
                // Started from the queue (the tasks started at admission ran before waitingOf was filled).
                if ((waitingOf.get(acct) ?? 0) > 0) {
                  // Every other account still waiting runs at least as many tasks as this one did.
                  for (const [other, w] of waitingOf)
                    if (other !== acct && w > 0 && (runningOf.get(other) ?? 0) < (runningOf.get(acct) ?? 0))
                      throw new Error(
                        `account ${acct} (${runningOf.get(acct)} running) went before ${other} (${runningOf.get(other) ?? 0})`,
                      );
                  waitingOf.set(acct, (waitingOf.get(acct) ?? 0) - 1);
                }
                runningOf.set(acct, (runningOf.get(acct) ?? 0) + 1);
                peak = Math.max(
                  peak,
                  [...runningOf.values()].reduce((x, y) => x + y, 0),
                );
                await new Promise<void>((open) => gates.push({ acct, open }));
                runningOf.set(acct, (runningOf.get(acct) ?? 1) - 1);
              });
              admitted.set(acct, (admitted.get(acct) ?? 0) + 1);
              if (sched.stats.running + sched.stats.waiting > [...admitted.values()].reduce((x, y) => x + y, 0))
                throw new Error("counted more tasks than admitted");
              return p;
            } catch (e) {
              if (!(e instanceof AppError)) throw e;
              if (e.status !== 429 && e.status !== 503) throw e;
              if (!e.headers["Retry-After"]) throw new Error("refused without Retry-After");
              refused++;
              return Promise.resolve();
            }
          });
          // What waits now: admitted tasks that did not start at once.
          const startedAtOnce = new Map<number, number>();
          for (const g of gates) startedAtOnce.set(g.acct, (startedAtOnce.get(g.acct) ?? 0) + 1);
          for (const [acct, n] of admitted) waitingOf.set(acct, n - (startedAtOnce.get(acct) ?? 0));
          if (sched.stats.waiting > maxWaiting) throw new Error(`${sched.stats.waiting} waiting > ${maxWaiting}`);
          for (const [acct, n] of admitted)
            if (n > perAccount) throw new Error(`account ${acct}: ${n} admitted > ${perAccount}`);
          // Release running tasks in an arbitrary order until everything ran.
          for (let i = 0; i < 1000 && (gates.length > 0 || sched.stats.running > 0); i++) {
            const g = gates.splice(releaseOrder[i % releaseOrder.length] % Math.max(1, gates.length), 1)[0];
            g?.open();
            await new Promise((r) => setTimeout(r, 0));
          }
          await Promise.all(all);
          if (peak > concurrency) throw new Error(`${peak} running > ${concurrency}`);
          if (started !== accounts.length - refused) throw new Error("a task never ran");
          const st = sched.stats;
          if (st.running !== 0 || st.waiting !== 0 || st.accounts !== 0)
            throw new Error(`leaked: ${JSON.stringify(st)}`);
        },
      ),
      { numRuns: runs },
    );
  },
};
