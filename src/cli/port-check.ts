import { createServer } from "node:net";

/**
 * Whether something already listens on host:port. Bun.serve with `development: false` binds with
 * SO_REUSEPORT, so a second `serve` on a port in use starts anyway and the kernel splits the
 * connections between the two servers (and their data dirs). A plain exclusive bind, closed at
 * once, finds the port taken; the window until Bun.serve binds is milliseconds.
 */
export function portInUse(host: string, port: number): Promise<boolean> {
  if (!port) return Promise.resolve(false); // 0: the kernel picks a free one
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (e: NodeJS.ErrnoException) => (e.code === "EADDRINUSE" ? resolve(true) : reject(e)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}
