/**
 * Issue 21: a model download is bounded whatever the server does, against real loopback servers —
 * an endless body of unknown size stops at the ceiling, a compressed body is refused (identity was
 * asked), and redirects are followed only as docs/MODELS.md says.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { downloadResumable } from "../../src/models/download.ts";
import { serveLoopback } from "./file-server.ts";
import { appError, tempDirs } from "./helpers.ts";

const tmp = tempDirs();
afterEach(() => tmp.cleanup());
const servers: { stop(force?: boolean): unknown }[] = [];
afterAll(() => {
  for (const s of servers) s.stop(true);
});
const serve = (fetch: (req: Request) => Response) => {
  const s = serveLoopback(fetch);
  servers.push(s);
  return `http://127.0.0.1:${s.port}`;
};
const get = (url: string, partFile: string, more: { maxUnknownBytes?: number; crossOriginHops?: number } = {}) =>
  downloadResumable({ url, partFile, expectedSize: null, fetchImpl: fetch, stallMs: 10_000, ...more });

describe("model downloads", () => {
  test("an endless body with no size announced stops at the ceiling and keeps nothing", async () => {
    const chunk = new Uint8Array(64 * 1024).fill(7);
    let sent = 0;
    const url = serve(
      () =>
        new Response(
          new ReadableStream({
            // Bounded only by the client: 64 MiB at most before the test would notice.
            pull(c) {
              if ((sent += chunk.length) > 64 << 20) c.close();
              else c.enqueue(chunk);
            },
          }),
        ),
    );
    const part = join(tmp.make(), "model.onnx.part");
    const err = await appError(get(`${url}/model.onnx`, part, { maxUnknownBytes: 1 << 20 }));
    expect(err.code).toBe("MODEL_DOWNLOAD_FAILED");
    expect(err.message).toContain("no size announced");
    // Not resumable (the next run would hit the same ceiling): nothing is kept, and the server was
    // read no further than the ceiling plus what loopback buffers hold.
    expect(existsSync(part)).toBe(false);
    expect(sent).toBeLessThan(32 << 20);
  });

  test("a gzip-encoded body is refused, not decoded (identity was asked)", async () => {
    const url = serve(
      () =>
        new Response(gzipSync(Buffer.alloc(8 << 20)), {
          headers: { "content-encoding": "gzip", "content-type": "application/octet-stream" },
        }),
    );
    const part = join(tmp.make(), "model.onnx.part");
    const err = await appError(get(`${url}/model.onnx`, part));
    expect(err.code).toBe("MODEL_DOWNLOAD_FAILED");
    expect(err.message).toContain('Content-Encoding "gzip"');
    expect(existsSync(part) ? statSync(part).size : 0).toBe(0);
  });

  test("one redirect to another host is followed, a second is refused naming it", async () => {
    const data = new Uint8Array(3000).fill(1);
    const far = serve(() => new Response(data));
    const middle = serve(() => new Response(null, { status: 302, headers: { location: `${far}/model.onnx` } }));
    const first = serve(() => new Response(null, { status: 302, headers: { location: `${middle}/model.onnx` } }));
    const dir = tmp.make();
    await get(`${middle}/model.onnx`, join(dir, "one.part"));
    expect(statSync(join(dir, "one.part")).size).toBe(3000);
    const err = await appError(get(`${first}/model.onnx`, join(dir, "two.part")));
    expect(err.code).toBe("MODEL_DOWNLOAD_FAILED");
    expect(err.message).toContain(`redirected to another host (${far})`);
  });
});
