/** Polls (bounded) until `cond` holds; returns whether it did. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 10_000, step = 25): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await Bun.sleep(step);
  }
  return cond();
}
