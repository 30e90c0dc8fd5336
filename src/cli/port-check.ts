import { createServer } from "node:net";

/**
 * Whether something already listens on host:port, so that `serve` can say so in words. Bun.serve
 * binds with SO_REUSEPORT unless told not to; `serve` tells it not to (unless `--share-port`), else
 * a second `serve` on a port in use would start and the kernel would split the connections between
 * two installs. A plain exclusive bind, closed at once, finds the port taken.
 */
export function portInUse(host: string, port: number): Promise<boolean> {
  if (!port) return Promise.resolve(false); // 0: the kernel picks a free one
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (e: NodeJS.ErrnoException) => (e.code === "EADDRINUSE" ? resolve(true) : reject(e)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}
