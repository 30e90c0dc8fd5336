/**
 * Asks `source` for up to `depth` items ahead of the consumer, so the producer (e.g. an ffmpeg
 * decode behind a pipe, which stops while its pipe is full) works while the consumer is busy with
 * the item before (e.g. waiting on a worker thread). At most `depth` items besides the one being
 * consumed are held; they come out in order, and a failure of the source comes out where its item
 * would have.
 *
 * An async generator queues `next()` calls, so asking ahead is just calling `next()` early. When
 * the consumer stops early (break, throw), the source is returned, which runs its `finally` (its
 * process disposed) once the items already asked for are done.
 *
 * Not src/media/split-decode.ts `ReadAhead`: that one starts reading at once and holds all of a
 * decode range (bounded by the range), so later ranges decode while an earlier one is consumed;
 * this one starts with the consumer and holds at most `depth` (a whole video's gray frames would
 * be ~0.9 MB each).
 */
export async function* readAhead<T>(source: AsyncIterable<T>, depth: number): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  const ahead: Promise<IteratorResult<T>>[] = [];
  let ended = false;
  const ask = () => {
    while (!ended && ahead.length < Math.max(1, depth)) {
      const next = it.next();
      // Rejections are read in order below; one asked for and never read must not be "unhandled".
      next.catch(() => {});
      ahead.push(next);
    }
  };
  try {
    ask();
    for (;;) {
      let r: IteratorResult<T>;
      try {
        r = await ahead.shift()!;
      } catch (e) {
        // The source threw: it has finished, and the rest of what was asked for reads as done.
        ended = true;
        throw e;
      }
      if (r.done) {
        ended = true;
        return;
      }
      ask(); // before handing the item over: the source works while the consumer does
      yield r.value;
    }
  } finally {
    if (!ended) await it.return?.();
  }
}
