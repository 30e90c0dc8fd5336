/**
 * ONNX Runtime 1.30 opens an empty /tmp/mat-debug-<pid>.log in each process that creates a session
 * (src/runtime/ort-debug-log.ts). A real child process — prepareRuntime, then a tiny CLIP model
 * loaded with onnxruntime-node — leaves none behind; one whose file has something in it keeps it;
 * `ORT_DISABLE_TELEMETRY=1` in its start environment stops the file being made at all.
 */
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { tempDir } from "../helpers/temp.ts";

const CHILD = join(import.meta.dirname, "ort-debug-log-child.ts");
const dir = tempDir("vsearch-ort-log-");
const logOf = (pid: number) => `/tmp/mat-debug-${pid}.log`;

interface ChildAnswer {
  pid: number;
  before: boolean;
  whileRunning: boolean;
  inputs: string[];
}

/**
 * The child run until it gets a pid no earlier process left a file for (other processes on this
 * machine may have left /tmp/mat-debug-<pid>.log behind, and pids are reused): at most 5 runs.
 */
async function runChild(extraEnv: Record<string, string>, mode = ""): Promise<ChildAnswer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await runChildOnce(extraEnv, mode);
    if (!answer.before || attempt >= 5) {
      expect(answer.before, `5 runs met a stale ${logOf(answer.pid)}`).toBe(false);
      return answer;
    }
  }
}

async function runChildOnce(extraEnv: Record<string, string>, mode: string): Promise<ChildAnswer> {
  const env: Record<string, string | undefined> = { ...process.env, ...extraEnv };
  if (!("ORT_DISABLE_TELEMETRY" in extraEnv)) delete env.ORT_DISABLE_TELEMETRY;
  const child = Bun.spawn([process.execPath, CHILD, dir, mode], { stdout: "pipe", stderr: "pipe", env });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  expect(code, err).toBe(0);
  const line = out.trim().split("\n").at(-1) ?? "";
  const answer = JSON.parse(line) as ChildAnswer;
  expect(answer.pid).toBe(child.pid);
  expect(answer.inputs).toEqual(["input_ids"]); // the model was really loaded
  return answer;
}

test.skipIf(process.platform !== "linux")(
  "a process that loaded a model leaves no empty mat-debug file; one with content is kept",
  async () => {
    const plain = await runChild({});
    // ONNX Runtime made it while the process ran (if a later version stops, this workaround can go)…
    expect(plain.whileRunning).toBe(true);
    // …and the process removed its own at exit.
    expect(existsSync(logOf(plain.pid))).toBe(false);

    const written = await runChild({}, "write");
    expect(written.whileRunning).toBe(true);
    try {
      expect(existsSync(logOf(written.pid))).toBe(true); // not empty: not the process's to throw away
    } finally {
      rmSync(logOf(written.pid), { force: true });
    }

    const off = await runChild({ ORT_DISABLE_TELEMETRY: "1" });
    expect(off.whileRunning).toBe(false);
    expect(existsSync(logOf(off.pid))).toBe(false);
  },
);
