/**
 * `npm run build` (= `bun build.ts`): compiles vsearch into one executable, ./vsearch.
 *
 *   bun build.ts [--entry src/main.ts] [--outfile ./vsearch]
 *
 * What goes in besides the code:
 * - the native files (sqlite-vec, ffmpeg, ffprobe, ONNX Runtime, sharp + libvips, and for on-screen
 *   text tesseract.js's wasm cores + English data and PP-OCR's two ONNX models + key list), imported
 *   `with { type: "file" }` from a module generated here; src/runtime/ extracts them to
 *   `<data-dir>/runtime/<version>/` on first start;
 * - extra entry points for worker threads: the Piscina task module, the worker bootstrap, the
 *   tesseract.js worker (src/ocr/tesseract-worker.ts, which takes its wasm from the extracted file),
 *   the PP-OCR pool's task module (src/ocr/ppocr/worker.ts, a second Piscina pool) and the
 *   embedded store's reader thread (src/store/sqlite/read-worker.ts);
 * - the version (`define VSEARCH_VERSION`);
 * - nothing special for PostgreSQL: postgres.js is pure JS and the migrations (`*.sql`, SQLite's and
 *   store/pg's) are imported `with { type: "text" }`, which Bun bundles as strings; the smoke test's
 *   PostgreSQL pass (scripts/smoke-pg.ts) proves both in the binary (its first start migrates an empty database);
 * - the dashboard (web/, bundled by web/bundle.ts) and Scalar's API reference bundle for /docs,
 *   served by src/api/dashboard.ts (`dashboardAssetsModule` below replaces src/api/dashboard-assets.ts).
 *
 * And four string patches of dependencies, each of which fails the build if its text is not found
 * exactly once (so an upgrade that changes the code stops the build instead of shipping a binary
 * that breaks at run time) or if the file it patches was never bundled:
 * 1. piscina: the worker script is `resolve(__dirname, 'worker.js')`, a path baked in at build time
 *    that does not exist inside the binary → the embedded path of src/runtime/piscina-worker.ts.
 * 2. @huggingface/transformers: loads onnxruntime-node through `createRequire`, which the bundler does
 *    not follow → a plain `require`, so onnxruntime-node is bundled.
 * 3. onnxruntime-node: `require("../bin/napi-v6/<platform>/<arch>/onnxruntime_binding.node")` → load
 *    the addon extracted to the data dir (beside libonnxruntime.so.1, found through its RUNPATH).
 * 4. sharp (imported by transformers at load time): its createRequire of `@img/sharp-<platform>/sharp.node`
 *    → the extracted addon (libvips found through its RPATH).
 * Patches 3 and 4 read the paths from worker_threads environment data that prepareRuntime() sets in
 * the main thread and every worker thread inherits.
 */
import type { BunPlugin } from "bun";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type NativeFiles, type NativeKey, resolveNativeFiles, runtimeLayout } from "./src/runtime/native-files.ts";
import { type EmbeddedAssets, NATIVE_PATHS_KEY } from "./src/runtime/types.ts";
import { bundleWeb } from "./web/bundle.ts";

const ROOT = dirname(fileURLToPath(import.meta.url));
const SRC = join(ROOT, "src");

export interface Patch {
  name: string;
  /** The package and the file inside it, e.g. "piscina" + "dist/index.js". */
  pkg: string;
  file: string;
  find: string;
  replace: string;
  applied: number;
}

/** Matches the absolute path of a patch's file (in whichever node_modules it was installed). */
export function patchFileRegExp(p: Pick<Patch, "pkg" | "file">): RegExp {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\//g, "[\\\\/]");
  return new RegExp(`[\\\\/]node_modules[\\\\/]${esc(p.pkg)}[\\\\/]${esc(p.file)}$`);
}

/** `/$bunfs/root/<path>.js`: where `bun build --compile` puts an entry point under the build root. */
export function bunfsPath(entry: string): string {
  return `/$bunfs/root/${relative(SRC, entry).replace(/\.[cm]?[jt]sx?$/, ".js")}`;
}

/** An expression that loads the addon `key` from the path prepareRuntime() published (see src/runtime/worker-thread.ts). */
function addonLoader(key: "ortBinding" | "sharpBinding", what: string): string {
  return `((key) => {
    const paths = require("node:worker_threads").getEnvironmentData(${JSON.stringify(NATIVE_PATHS_KEY)});
    if (!paths || typeof paths[key] !== "string") {
      throw new Error("vsearch: ${what} was loaded before prepareRuntime() ran; in the compiled binary load @huggingface/transformers and onnxruntime-node only after prepareRuntime() (dynamic import) or inside inference pool workers");
    }
    const mod = { exports: {} };
    process.dlopen(mod, paths[key]);
    return mod.exports;
  })(${JSON.stringify(key)})`;
}

/** The four dependency patches (see the header). `file` is matched against absolute paths. */
export function dependencyPatches(piscinaWorkerPath: string, platformArch: string): Patch[] {
  return [
    {
      name: "piscina worker path",
      pkg: "piscina",
      file: "dist/index.js",
      find: "(0, node_path_1.resolve)(__dirname, 'worker.js')",
      replace: JSON.stringify(piscinaWorkerPath),
      applied: 0,
    },
    {
      name: "transformers loads onnxruntime-node",
      pkg: "@huggingface/transformers",
      file: "dist/transformers.node.mjs",
      find: 'requireFromHere("onnxruntime-node")',
      replace: 'require("onnxruntime-node")',
      applied: 0,
    },
    {
      name: "onnxruntime-node addon",
      pkg: "onnxruntime-node",
      file: "dist/binding.js",
      find: "require(`../bin/napi-v6/${process.platform}/${process.arch}/onnxruntime_binding.node`)",
      replace: addonLoader("ortBinding", "onnxruntime-node"),
      applied: 0,
    },
    {
      name: "sharp addon",
      pkg: "sharp",
      file: "dist/sharp.mjs",
      find: `sharp = require("@img/sharp-${platformArch}/sharp.node");`,
      replace: `sharp = ${addonLoader("sharpBinding", "sharp")};`,
      applied: 0,
    },
  ];
}

/** Source of the module that replaces src/runtime/embedded.ts in the binary. */
export function embeddedAssetsModule(files: NativeFiles, entries: EmbeddedAssets["entries"]): string {
  const layout = runtimeLayout(files);
  const keys = Object.keys(files) as NativeKey[];
  const imports = keys.map((k, i) => `import f${i} from ${JSON.stringify(files[k])} with { type: "file" };`);
  const table = keys.map(
    (k, i) =>
      `    ${k}: { path: f${i}, target: ${JSON.stringify(layout[k].target)}, executable: ${layout[k].executable} },`,
  );
  return [
    "// Generated by build.ts for the compiled binary; replaces src/runtime/embedded.ts.",
    ...imports,
    "export function embeddedAssets() {",
    "  return {",
    `    platform: ${JSON.stringify(`${process.platform}-${process.arch}`)},`,
    "    files: {",
    ...table,
    "    },",
    `    entries: ${JSON.stringify(entries)},`,
    "  };",
    "}",
    "",
  ].join("\n");
}

/**
 * Bundles the dashboard into `dir` and returns the source of the module that replaces
 * src/api/dashboard-assets.ts in the binary: every file embedded `with { type: "file" }`, read once.
 */
export async function dashboardAssetsModule(
  dir: string,
  scalarFile: string,
): Promise<{ source: string; assets: { path: string; bytes: number; gzip: number }[] }> {
  // The typed API client's types are regenerated from the served document and the dashboard is
  // typechecked against them (web/api-types.ts): an API change that breaks a page stops the build.
  const web = await bundleWeb({
    generateClient: true,
    onTypesChanged: () => console.log("web/src/openapi.gen.ts regenerated from /v1/openapi.json (commit it)"),
  });
  const lines = ["// Generated by build.ts for the compiled binary; replaces src/api/dashboard-assets.ts."];
  const entries: string[] = [];
  web.forEach((a, i) => {
    const file = join(dir, `w${i}-${a.path === "/" ? "index.html" : a.path.split("/").pop()}`);
    writeFileSync(file, a.body);
    lines.push(`import w${i} from ${JSON.stringify(file)} with { type: "file" };`);
    entries.push(
      `{ path: ${JSON.stringify(a.path)}, type: ${JSON.stringify(a.type)}, immutable: ${a.immutable}, body: once(w${i}) }`,
    );
  });
  lines.push(`import scalar from ${JSON.stringify(scalarFile)} with { type: "file" };`);
  lines.push(
    "const once = (p) => { let b = null; return async () => (b ??= await Bun.file(p).bytes()); };",
    `const assets = { web: [${entries.join(", ")}], scalar: { path: "/docs/scalar.js", type: "text/javascript; charset=utf-8", immutable: false, body: once(scalar) } };`,
    "export function dashboardAssets() { return Promise.resolve(assets); }",
    "",
  );
  return {
    source: lines.join("\n"),
    assets: web.map((a) => ({
      path: a.path,
      bytes: a.body.length,
      gzip: Bun.gzipSync(a.body as Uint8Array<ArrayBuffer>).length,
    })),
  };
}

function dashboardPlugin(source: string): BunPlugin {
  const target = join(SRC, "api", "dashboard-assets.ts");
  return {
    name: "vsearch-dashboard",
    setup(build) {
      build.onResolve({ filter: /^\.\/dashboard-assets\.ts$/ }, (args) =>
        resolve(dirname(args.importer), args.path) === target
          ? { path: "dashboard-assets", namespace: "vsearch-generated" }
          : undefined,
      );
      build.onLoad({ filter: /^dashboard-assets$/, namespace: "vsearch-generated" }, () => ({
        contents: source,
        loader: "js",
      }));
    },
  };
}

/** Applies one patch; throws unless its text occurs exactly once. */
export function applyPatch(p: Patch, text: string, path: string): string {
  const at = text.indexOf(p.find);
  if (at < 0 || text.indexOf(p.find, at + 1) >= 0) {
    throw new Error(
      `build.ts patch "${p.name}": expected exactly one occurrence of ${JSON.stringify(p.find)} in ${path}, found ${at < 0 ? "none" : "several"}. ` +
        "The dependency changed: check that the compiled binary still needs this patch and update it.",
    );
  }
  return text.slice(0, at) + p.replace + text.slice(at + p.find.length);
}

function compilePlugin(patches: Patch[], embeddedSource: string, piscinaWorkerLoop: string): BunPlugin {
  const embeddedTs = join(SRC, "runtime", "embedded.ts");
  let embeddedSwapped = 0;
  return {
    name: "vsearch-compile",
    setup(build) {
      build.onResolve({ filter: /^\.\/embedded\.ts$/ }, (args) => {
        if (resolve(dirname(args.importer), args.path) !== embeddedTs) return undefined;
        embeddedSwapped++;
        return { path: "embedded-assets", namespace: "vsearch-generated" };
      });
      build.onLoad({ filter: /^embedded-assets$/, namespace: "vsearch-generated" }, () => ({
        contents: embeddedSource,
        loader: "js",
      }));
      // Piscina's worker loop is not in its package's exports map; piscina-worker.ts imports it by file.
      build.onResolve({ filter: /^piscina\/dist\/worker\.js$/ }, () => ({ path: piscinaWorkerLoop }));

      const filter = new RegExp(patches.map((p) => patchFileRegExp(p).source).join("|"));
      build.onLoad({ filter }, async (args) => {
        let text = await Bun.file(args.path).text();
        for (const p of patches) {
          if (!patchFileRegExp(p).test(args.path)) continue;
          text = applyPatch(p, text, args.path);
          p.applied++;
        }
        return { contents: text, loader: "js" };
      });
      build.onEnd(() => {
        if (embeddedSwapped !== 1)
          throw new Error(`build.ts: src/runtime/embedded.ts was swapped ${embeddedSwapped} times, expected once`);
      });
    },
  };
}

export interface BuildOptions {
  /** The CLI entry point (relative paths: from the current folder). */
  entry: string;
  outfile: string;
}

export async function buildBinary(opts: BuildOptions): Promise<{
  outfile: string;
  bytes: number;
  ms: number;
  version: string;
  dashboard: { path: string; bytes: number; gzip: number }[];
}> {
  const t0 = performance.now();
  const pkg = (await Bun.file(join(ROOT, "package.json")).json()) as { version: string };
  const version = pkg.version;
  const require = createRequire(join(ROOT, "package.json"));
  const platformArch = `${process.platform}-${process.arch}`;

  const entry = resolve(opts.entry);
  const outfile = resolve(opts.outfile);
  const piscinaWorker = join(SRC, "runtime", "piscina-worker.ts");
  const inferenceWorker = join(SRC, "inference", "worker.ts");
  const ocrWorker = join(SRC, "ocr", "tesseract-worker.ts");
  const ppocrWorker = join(SRC, "ocr", "ppocr", "worker.ts");
  const storeReader = join(SRC, "store", "sqlite", "read-worker.ts");
  for (const e of [entry, piscinaWorker, inferenceWorker, ocrWorker, ppocrWorker, storeReader]) {
    if (relative(SRC, e).startsWith("..")) throw new Error(`entry point ${e} must be under ${SRC}`);
    if (!(await Bun.file(e).exists())) throw new Error(`entry point ${e} does not exist`);
  }
  const entries = {
    inferenceWorker: bunfsPath(inferenceWorker),
    piscinaWorker: bunfsPath(piscinaWorker),
    ocrWorker: bunfsPath(ocrWorker),
    ppocrWorker: bunfsPath(ppocrWorker),
    storeReader: bunfsPath(storeReader),
  };
  const files = resolveNativeFiles(join(ROOT, "package.json"));

  const patches = dependencyPatches(entries.piscinaWorker, platformArch);

  const plugin = compilePlugin(
    patches,
    embeddedAssetsModule(files, entries),
    join(dirname(require.resolve("piscina")), "worker.js"),
  );
  const webDir = mkdtempSync(join(tmpdir(), "vsearch-web-"));
  const scalarFile = join(dirname(require.resolve("@scalar/api-reference")), "browser", "standalone.js");
  const dashboard = await dashboardAssetsModule(webDir, scalarFile).catch((e) => {
    rmSync(webDir, { recursive: true, force: true });
    throw e;
  });
  const result = await Bun.build({
    entrypoints: [entry, piscinaWorker, inferenceWorker, ocrWorker, ppocrWorker, storeReader],
    root: SRC,
    target: "bun",
    // An appliance reads its settings from flags, VSEARCH_* and <data-dir>/config.json only: no
    // .env or bunfig.toml picked up from whatever folder it is started in.
    compile: { outfile, autoloadDotenv: false, autoloadBunfig: false },
    define: { VSEARCH_VERSION: JSON.stringify(version) },
    plugins: [plugin, dashboardPlugin(dashboard.source)],
    // One copy of each shared module (piscina above all) per thread: without splitting, every entry point
    // bundles its own piscina, and a worker thread would run two (its `Piscina.move()` marker is a
    // per-copy Symbol, so the task module's transfers would not be recognised by the worker loop).
    splitting: true,
    sourcemap: "linked",
    minify: { whitespace: true, syntax: true, identifiers: false },
    throw: false,
  }).finally(() => rmSync(webDir, { recursive: true, force: true }));
  // The binary embeds its source maps; Bun also writes them beside the outfile: remove those.
  for (const o of result.outputs) if (o.kind === "sourcemap") rmSync(o.path, { force: true });
  if (!result.success) {
    throw new Error(`bun build failed:\n${result.logs.map((l) => String(l)).join("\n")}`);
  }
  const missing = patches.filter((p) => p.applied !== 1);
  if (missing.length > 0) {
    rmSync(outfile, { force: true }); // never leave a binary that would fail at run time
    throw new Error(
      `build.ts: ${missing.map((p) => `patch "${p.name}" applied ${p.applied} times`).join("; ")}, expected once each (did a dependency stop loading that file?)`,
    );
  }
  return { outfile, bytes: Bun.file(outfile).size, ms: performance.now() - t0, version, dashboard: dashboard.assets };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      entry: { type: "string", default: join(SRC, "main.ts") },
      outfile: { type: "string", default: join(ROOT, "vsearch") },
    },
  });
  try {
    const r = await buildBinary({ entry: values.entry!, outfile: values.outfile! });
    console.log(
      `built ${relative(process.cwd(), r.outfile) || r.outfile}: vsearch ${r.version}, ${(r.bytes / 1024 / 1024).toFixed(1)} MiB, ${(r.ms / 1000).toFixed(1)} s`,
    );
    const js = r.dashboard.filter((a) => a.path.endsWith(".js"));
    console.log(
      `dashboard JS: ${js.reduce((n, a) => n + a.bytes, 0)} B, ${js.reduce((n, a) => n + a.gzip, 0)} B gzipped`,
    );
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  }
}
