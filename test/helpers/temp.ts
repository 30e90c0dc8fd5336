/** Disposable temp dirs: made under the OS temp dir, removed after the file's tests. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

export interface TempDirs {
  /** A fresh, empty directory (any time: in a test, a hook or at file level). */
  make(prefix?: string): string;
  /** Removes every directory made so far (also runs by itself after the file's tests). */
  cleanup(): void;
}

/**
 * Every dir made here, removed after the test file too: a `tempDirs()` or `tempDir()` called inside
 * a running test registers its `afterAll` too late (vitest ignores it without a word) and its dirs
 * were left in /tmp, 60+ per run. This hook is registered when the module loads, while the file is
 * collected (each test file loads its own copy: `isolate` is on).
 */
const everyDir: string[] = [];
try {
  afterAll(() => {
    for (const d of everyDir.splice(0)) rmSync(d, { recursive: true, force: true });
  });
} catch {
  // Loaded outside vitest's runner: a helper process a test spawns (test/jobs/claimer-process.ts
  // opens stores through these helpers); its test file removes the dirs.
}

/** Removes `dir` (made some other way) after the test file, with the dirs made here. */
export function removeAfterFile(dir: string): void {
  if (!everyDir.includes(dir)) everyDir.push(dir);
}

/**
 * Temp dirs made on demand. Call `tempDirs()` at file or describe level (it registers the
 * `afterAll` that removes them); `make()` may then be called anywhere.
 */
export function tempDirs(prefix = "vsearch-test-"): TempDirs {
  const made: string[] = [];
  const dirs: TempDirs = {
    make(p = prefix) {
      const d = mkdtempSync(join(tmpdir(), p));
      made.push(d);
      everyDir.push(d);
      return d;
    },
    cleanup() {
      for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  };
  afterAll(() => dirs.cleanup());
  return dirs;
}

/** One temp dir for the whole file (call at file or describe level), removed after its tests. */
export function tempDir(prefix = "vsearch-test-"): string {
  return tempDirs(prefix).make();
}

/** A temp dir that is not tied to a test file's hooks; the caller removes it (`removeDir`). */
export function makeTempDir(prefix = "vsearch-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
