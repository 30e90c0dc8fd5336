/**
 * ONNX Runtime 1.30's telemetry (src/runtime/ort-telemetry.ts) writes under $HOME/.cache/Microsoft
 * and $TMPDIR in each process that creates a session. A real child process — prepareRuntime, then a
 * tiny CLIP model loaded with onnxruntime-node — with a fresh HOME and TMPDIR and without
 * ORT_DISABLE_TELEMETRY in its start environment writes nothing there: prepareRuntime set the
 * switch in the C library's environment. An operator's own value stands; where it leaves the
 * telemetry on, the files are made (the control that shows the look would see them) and the
 * process still removes its empty mat-debug file at exit (src/runtime/ort-debug-log.ts).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { tempDirs } from "../helpers/temp.ts";

const CHILD = join(import.meta.dirname, "ort-debug-log-child.ts");
const dirs = tempDirs("vsearch-ort-telemetry-");
const TELEMETRY_DIR = join(".cache", "Microsoft", "DeveloperTools", ".onnxruntime");
/** The variables by which ONNX Runtime 1.30 takes itself to be in a CI job (telemetry off). */
const ORT_CI_VARIABLES = [
  "CI",
  "TF_BUILD",
  "GITHUB_ACTIONS",
  "GITLAB_CI",
  "CIRCLECI",
  "TRAVIS",
  "JENKINS_URL",
  "CODEBUILD_BUILD_ID",
  "BUILDKITE",
  "TEAMCITY_VERSION",
  "APPVEYOR",
  "BITBUCKET_BUILD_NUMBER",
];

interface ChildRun {
  pid: number;
  /** ORT_DISABLE_TELEMETRY in the child's start environment, and in its C environment after prepareRuntime. */
  startValue: string | null;
  cValue: string | null;
  /** Whether its mat-debug file was there after the model was loaded. */
  debugLog: boolean;
  /** Every file left under the child's HOME and TMPDIR after it exited (relative, prefixed). */
  left: string[];
}

const filesUnder = (dir: string, label: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => join(label, e.parentPath.slice(dir.length), e.name))
    .sort();

/** `telemetry`: the child's ORT_DISABLE_TELEMETRY (undefined: not in its environment at all). */
async function runChild(telemetry: string | undefined, ...args: string[]): Promise<ChildRun> {
  const home = dirs.make();
  const tmp = dirs.make();
  // Bun's own transpiler cache would land in $HOME/.bun: not what is looked for here.
  const env: Record<string, string | undefined> = {
    ...process.env,
    HOME: home,
    TMPDIR: tmp,
    BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0",
  };
  delete env.ORT_DISABLE_TELEMETRY;
  // ONNX Runtime 1.30 keeps its telemetry off by itself where a CI service's variable is set, and
  // writes its cache under XDG_CACHE_HOME when that is set (both read from libonnxruntime.so's
  // strings, and seen: with CI=true the control below found no files). Without them the child
  // behaves as it does on an operator's machine, wherever this suite runs.
  for (const name of ORT_CI_VARIABLES) delete env[name];
  delete env.XDG_CACHE_HOME;
  if (telemetry !== undefined) env.ORT_DISABLE_TELEMETRY = telemetry;
  const child = Bun.spawn([process.execPath, CHILD, dirs.make(), ...args], { stdout: "pipe", stderr: "pipe", env });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  expect(code, err).toBe(0);
  const answer = JSON.parse(out.trim().split("\n").at(-1) ?? "");
  expect(answer.pid).toBe(child.pid);
  expect(answer.inputs).toEqual(["input_ids"]); // the model was really loaded
  return { ...answer, left: [...filesUnder(home, "$HOME"), ...filesUnder(tmp, "$TMPDIR")] };
}

const linuxOnly = test.skipIf(process.platform !== "linux");

linuxOnly("without ORT_DISABLE_TELEMETRY at start, a process that loaded a model writes nothing outside", async () => {
  const run = await runChild(undefined); // loaded in a worker thread, as the inference pool does
  expect(run.startValue).toBeNull();
  expect(run.cValue).toBe("1"); // prepareRuntime put it where ONNX Runtime reads it
  expect(run.debugLog).toBe(false);
  expect(run.left).toEqual([]);

  // Set but empty is taken as not set (the library would read it as "on").
  const empty = await runChild("", "thread=main");
  expect(empty.cValue).toBe("1");
  expect(empty.left).toEqual([]);
});

linuxOnly("an operator's own value stands: 1 keeps it off, 0 turns it on", async () => {
  const off = await runChild("1", "thread=main");
  expect(off.cValue).toBe("1");
  expect(off.left).toEqual([]);

  // The control: with the telemetry on, the files this look must catch are made…
  const on = await runChild("0", "thread=main");
  expect(on.cValue).toBe("0");
  expect(on.left).toEqual(expect.arrayContaining([join("$HOME", TELEMETRY_DIR, "deviceid")]));
  // …and the empty mat-debug file was there while the process ran, and removed at its exit.
  expect(on.debugLog).toBe(true);
  expect(on.left.filter((f) => f.includes("mat-debug"))).toEqual([]);

  // One with something in it is not the process's to throw away.
  const written = await runChild("0", "thread=main", "write");
  expect(written.debugLog).toBe(true);
  expect(written.left).toContain(join("$TMPDIR", `mat-debug-${written.pid}.log`));
});
