import { readFileSync } from "node:fs";
import { totalmem } from "node:os";

/**
 * `vector_memory_budget` (issue 27) in bytes: MiB as a number, or a share of the machine's memory
 * ("50%", of the smaller of the RAM and the cgroup's memory limit, as a container sees it); 0: no
 * limit. Throws on a value `memoryBudgetProblem` refuses (the settings row checks it first).
 */
export function memoryBudgetBytes(v: string | number): number {
  const problem = memoryBudgetProblem(v);
  if (problem) throw new Error(`vector_memory_budget: ${problem}`);
  const text = String(v).trim();
  const pct = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
  if (pct) return Math.floor((Number(pct[1]) / 100) * machineMemory());
  return Math.floor(Number(text) * 2 ** 20);
}

/** What is wrong with a budget value, in words; undefined when it is good. */
export function memoryBudgetProblem(v: string | number): string | undefined {
  const text = String(v).trim();
  const pct = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
  if (pct) {
    const share = Number(pct[1]) / 100;
    return share > 0 && share <= 1 ? undefined : `${text} is not a share between 0 and 100%`;
  }
  const mib = Number(text);
  if (!Number.isFinite(mib) || mib < 0 || text === "")
    return `"${text}" is neither MiB (a number, 0 or more) nor a share like "50%"`;
  return undefined;
}

/** The memory this process may use: the RAM, or less where a cgroup (a container) limits it. */
function machineMemory(): number {
  let bytes = totalmem();
  for (const f of ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]) {
    try {
      const limit = Number(readFileSync(f, "utf8").trim());
      if (Number.isFinite(limit) && limit > 0 && limit < bytes) bytes = limit;
    } catch {
      // No such limit here.
    }
  }
  return bytes;
}
