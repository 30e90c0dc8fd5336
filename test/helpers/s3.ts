/**
 * A local S3-compatible server for tests: s3rver (npm, pure JavaScript), run by `node` as a child
 * process on loopback, a free port and a temp folder, with one bucket. It answers Bun's S3 client
 * (put, multipart, stat, ranged GET, list, delete, presigned GET) but does NOT verify request
 * signatures: tests prove the client's requests and vsearch's use of them, not S3's authentication.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3ObjectStore } from "../../src/media/object-store-s3.ts";

export interface S3Server {
  endpoint: string;
  bucket: string;
  /** The VSEARCH_S3_* settings that point an app at this bucket (under `prefix` when given). */
  env(prefix?: string): Record<string, string>;
  /** The bucket (under `prefix`) as the app sees it: how a test reads what is stored there. */
  objects(prefix?: string): S3ObjectStore;
  /** Stops answering (the process ends; its folder is kept): a bucket that cannot be reached. */
  pause(): Promise<void>;
  /** Answers again on the same port, with what it held. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

const S3RVER = join(import.meta.dirname, "..", "..", "node_modules", "s3rver", "bin", "s3rver.js");

/** Needs `node` on PATH (CI has Node 20) and node_modules/s3rver (a devDependency). */
export async function startS3(bucket = "media"): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), "vsearch-s3rver-")); // (not temp.ts: the smoke test runs this outside vitest)
  let running = await spawnS3rver(dir, bucket, 0);
  const endpoint = `http://127.0.0.1:${running.port}`;
  const halt = async () => {
    running.proc.kill();
    await running.proc.exited;
  };
  return {
    endpoint,
    bucket,
    env: (prefix?: string) => ({
      VSEARCH_S3_BUCKET: bucket,
      VSEARCH_S3_ENDPOINT: endpoint,
      VSEARCH_S3_ACCESS_KEY_ID: "S3RVER",
      VSEARCH_S3_SECRET_ACCESS_KEY: "S3RVER",
      ...(prefix ? { VSEARCH_S3_PREFIX: prefix } : {}),
    }),
    objects: (prefix?: string) =>
      new S3ObjectStore({ endpoint, bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", prefix }),
    pause: halt,
    async resume() {
      running = await spawnS3rver(dir, bucket, running.port);
    },
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** s3rver on `port` (0: a free one) over `dir`; resolves once it listens (bounded: 30 s or its exit). */
async function spawnS3rver(dir: string, bucket: string, port: number) {
  const proc = Bun.spawn(
    ["node", S3RVER, "-d", dir, "-a", "127.0.0.1", "-p", String(port), "--silent", "--configure-bucket", bucket],
    { stdout: "pipe", stderr: "pipe" },
  );
  // It prints "S3rver listening on 127.0.0.1:PORT" once it listens.
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  const deadline = Date.now() + 30_000;
  const listening = /listening on 127\.0\.0\.1:(\d+)/;
  while (!listening.test(text) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const bound = listening.exec(text)?.[1];
  if (!bound) {
    proc.kill();
    if (port === 0) rmSync(dir, { recursive: true, force: true });
    throw new Error(`s3rver did not start: ${text}${await new Response(proc.stderr as ReadableStream).text()}`);
  }
  return { proc, port: Number(bound) };
}
