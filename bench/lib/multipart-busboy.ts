import busboy from "busboy";
import { MultipartError, type PartHandlers } from "../../src/upload/multipart-stream.ts";

/**
 * `readMultipart` on busboy, kept only to measure it against the hand-written reader
 * (bench/multipart-parse.ts; issue 10). It passes test/upload when wired in. Same
 * contract: parts handed over chunk by chunk, `onPartData` awaited before more is read.
 */
export async function readMultipartBusboy(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  h: PartHandlers,
  maxFieldBytes = 64 * 1024,
): Promise<void> {
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: { "content-type": contentType },
      defParamCharset: "utf8",
      limits: { fieldSize: maxFieldBytes, parts: 1000, headerPairs: 100 },
    });
  } catch (e) {
    throw new MultipartError((e as Error).message);
  }
  let failure: unknown = null;
  const fail = (e: unknown) => {
    failure ??= e;
  };
  // Parts arrive in order; each one's handlers run in a chain so onPartStart/Data/End never interleave.
  let chain: Promise<void> = Promise.resolve();
  // The chain never rejects (it ends in .catch(fail)); a failure skips the handlers after it.
  const then = (f: () => void | Promise<void>): void => {
    chain = chain.then(() => (failure ? undefined : f())).catch(fail);
  };

  bb.on("file", (name, stream, info) => {
    then(() => h.onPartStart({ name, filename: info.filename ?? null, contentType: info.mimeType ?? null }));
    stream.on("data", (chunk: Buffer) => {
      stream.pause();
      then(() => h.onPartData(chunk));
      chain = chain.then(() => void stream.resume()); // resumed after the data is handled, even after a failure
    });
    stream.on("end", () => then(() => h.onPartEnd()));
  });
  bb.on("field", (name, value, info) => {
    if (info.valueTruncated) return fail(new MultipartError(`field ${name} is longer than ${maxFieldBytes} bytes`));
    then(() => h.onPartStart({ name, filename: null, contentType: info.mimeType ?? null }));
    then(() => h.onPartData(Buffer.from(value, "utf8")));
    then(() => h.onPartEnd());
  });
  const closed = new Promise<void>((resolve, reject) => {
    bb.on("close", resolve);
    bb.on("error", (e) => reject(new MultipartError((e as Error).message)));
    bb.on("partsLimit", () => reject(new MultipartError("too many parts")));
  });
  closed.catch(fail);

  const reader = body.getReader();
  let ended = false;
  try {
    for (;;) {
      if (failure) break;
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      if (!bb.write(value))
        await new Promise<void>((r) => {
          bb.once("drain", r);
          closed.then(r, r);
        });
    }
    if (!failure) {
      bb.end();
      await closed.catch(fail);
    }
    await chain;
  } finally {
    if (!ended) await reader.cancel().catch(() => {});
  }
  if (failure) throw failure;
}
