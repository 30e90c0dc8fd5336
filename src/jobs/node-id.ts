import { randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const NODE_ID = /^node_[0-9a-f]{16}$/;

/**
 * This node's stable id: `<data-dir>/node-id`, made on first use. Task leases carry it
 * (`tasks.lease_node`), so a node that restarts on the same data dir (one per data dir: the
 * instance lock) frees what its crashed previous incarnation held at once, while the leases of
 * every other node (another data dir, later another machine) are left to run out. A backup does
 * not carry it: a restored copy is another node.
 * Returns null when it cannot be read or written (a full disk at the very first start): the
 * caller then runs under a one-off id and its leases, if it crashes, simply run out.
 */
export function loadOrCreateNodeId(dataDir: string): string | null {
  const file = join(dataDir, "node-id");
  const read = () => {
    const text = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
    return NODE_ID.test(text) ? text : null;
  };
  try {
    const known = read();
    if (known) return known;
    if (existsSync(file)) rmSync(file, { force: true }); // not an id (a truncated write): make a new one
    mkdirSync(dataDir, { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(tmp, `node_${randomBytes(8).toString("hex")}\n`, { mode: 0o644 });
    try {
      linkSync(tmp, file); // fails if another process made it first; then its id is ours too
    } catch {
      // lost the race, or the file system has no hard links: read what is there
    } finally {
      rmSync(tmp, { force: true });
    }
    return read();
  } catch {
    return null;
  }
}

/** A one-off id for a process that has no stable one (see loadOrCreateNodeId). */
export const ephemeralNodeId = (): string => `node_${randomBytes(8).toString("hex")}`;
