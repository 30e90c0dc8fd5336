import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { applyPatch, bunfsPath, dependencyPatches, patchFileRegExp } from "../../build.ts";

const ROOT = join(import.meta.dirname, "..", "..");

// build.ts fails the build when a patch no longer applies; these run the same check against the
// installed dependencies in the test suite, without compiling.
describe("build.ts dependency patches", () => {
  const patches = dependencyPatches("/$bunfs/root/runtime/piscina-worker.js", `${process.platform}-${process.arch}`);

  test.each(patches.map((p) => [p.name, p] as const))(
    "%s: its text occurs exactly once in the installed file",
    (_name, p) => {
      const file = join(ROOT, "node_modules", p.pkg, p.file);
      expect(patchFileRegExp(p).test(file)).toBe(true);
      const text = readFileSync(file, "utf8");
      const patched = applyPatch(p, text, file);
      expect(patched).not.toContain(p.find);
      expect(patched).toContain(p.replace);
    },
  );

  test("a patch whose text is missing or repeated stops the build with the file's name", () => {
    const p = patches[0];
    expect(() => applyPatch(p, "nothing here", "/x/piscina/dist/index.js")).toThrow(
      /patch "piscina worker path".*in \/x\/piscina\/dist\/index\.js, found none/,
    );
    expect(() => applyPatch(p, `${p.find};${p.find}`, "f.js")).toThrow(/found several/);
  });

  test("the addon loaders read the paths prepareRuntime publishes and name the ordering mistake", () => {
    const ort = patches.find((p) => p.pkg === "onnxruntime-node")!;
    expect(ort.replace).toContain('getEnvironmentData("vsearch:native-load-paths")');
    expect(ort.replace).toContain('"ortBinding"');
    expect(ort.replace).toContain("before prepareRuntime() ran");
  });

  test("entry points live under /$bunfs/root/ by their path below src/", () => {
    expect(bunfsPath(join(ROOT, "src", "inference", "worker.ts"))).toBe("/$bunfs/root/inference/worker.js");
  });
});
