/** VSEARCH_DEVICE semantics (probe injected), plus real probes with onnxruntime-node on this machine. */
import { describe, expect, it } from "vitest";
import {
  AUTO_CANDIDATES,
  chooseDevice,
  createPoolProbe,
  type DeviceProbe,
  type GpuDevice,
  type ProbeResult,
} from "../../src/inference/device.ts";
import { createModelProbe } from "../../src/inference/selftest.ts";
import { CLIP_DIR, WHISPER_DIR, WORKER_FILE } from "./helpers.ts";

function fakeProbe(results: Partial<Record<GpuDevice, ProbeResult | Error>>) {
  const calls: GpuDevice[] = [];
  const probe: DeviceProbe = (d) => {
    calls.push(d);
    const r = results[d];
    if (r instanceof Error) throw r;
    return r ?? { ok: false, detail: `${d} not available` };
  };
  return { probe, calls };
}

describe("chooseDevice", () => {
  it("cpu never probes", async () => {
    const { probe, calls } = fakeProbe({ cuda: { ok: true, detail: "ok" } });
    expect(await chooseDevice("cpu", probe)).toMatchObject({
      device: "cpu",
      requested: "cpu",
      reason: "cpu requested",
    });
    expect(calls).toEqual([]);
  });

  it("auto picks CUDA only when it really loads", async () => {
    const ok = fakeProbe({ cuda: { ok: true, detail: "text tower ran in 3 ms" } });
    const choice = await chooseDevice("auto", ok.probe);
    expect(choice).toMatchObject({ device: "cuda", requested: "auto" });
    expect(choice.reason).toContain("text tower ran in 3 ms");

    const no = fakeProbe({
      cuda: { ok: false, detail: "Failed to load shared library" },
      webgpu: { ok: true, detail: "ok" },
    });
    const fallback = await chooseDevice("auto", no.probe);
    expect(fallback.device).toBe("cpu");
    expect(fallback.reason).toMatch(/no GPU execution provider.*Failed to load shared library/);
    expect(fallback.probes.cuda).toEqual({ ok: false, detail: "Failed to load shared library" });
    // WebGPU is opt-in only: auto never tries it.
    expect(no.calls).toEqual([...AUTO_CANDIDATES]);
    expect(no.calls).not.toContain("webgpu");
  });

  it("auto treats a throwing probe as a failed one", async () => {
    const { probe } = fakeProbe({ cuda: new Error("OrtSessionOptionsAppendExecutionProvider_Cuda: boom") });
    const choice = await chooseDevice("auto", probe);
    expect(choice.device).toBe("cpu");
    expect(choice.probes.cuda).toEqual({ ok: false, detail: "OrtSessionOptionsAppendExecutionProvider_Cuda: boom" });
  });

  it("an explicit GPU that cannot load is a clear error, never a silent CPU fallback", async () => {
    for (const d of ["cuda", "webgpu"] as const) {
      const { probe } = fakeProbe({ [d]: { ok: false, detail: "No supported adapters" } });
      await expect(chooseDevice(d, probe)).rejects.toMatchObject({
        code: "DEVICE_UNAVAILABLE",
        message: expect.stringMatching(new RegExp(`VSEARCH_DEVICE=${d}.*No supported adapters.*auto or cpu`)),
      });
      const good = fakeProbe({ [d]: { ok: true, detail: "ran" } });
      expect(await chooseDevice(d, good.probe)).toMatchObject({ device: d, requested: d });
      expect(good.calls).toEqual([d]);
    }
  });

  it("accepts any case and surrounding spaces, refuses unknown values", async () => {
    const { probe } = fakeProbe({ cuda: { ok: true, detail: "ok" } });
    expect((await chooseDevice(" CUDA ", probe)).device).toBe("cuda");
    await expect(chooseDevice("tpu", probe)).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("tpu"),
    });
  });
});

describe("real probes (onnxruntime-node as installed)", () => {
  it("the CPU provider loads and runs a model (in a worker, and in-process)", async () => {
    const r = await createPoolProbe({ workerFile: WORKER_FILE, modelDir: CLIP_DIR })("cpu");
    expect(r.ok).toBe(true);
    expect(r.detail).toMatch(/clip text tower of tiny-random-clip@[0-9a-f]{12} ran in/);
    const w = await createModelProbe(WHISPER_DIR, { intraOpThreads: 1 })("cpu");
    expect(w.detail).toMatch(/whisper encoder\+decoder/);
  });

  it("a probe of a missing model fails with its reason", async () => {
    await expect(
      createPoolProbe({ workerFile: WORKER_FILE, modelDir: "/nonexistent/clip" })("cpu"),
    ).rejects.toMatchObject({
      code: "MODEL_NOT_INSTALLED",
    });
  });

  it("auto and cuda agree with what the CUDA provider really does here", async () => {
    const real = createPoolProbe({ workerFile: WORKER_FILE, modelDir: CLIP_DIR });
    let cuda: ProbeResult | undefined;
    const once: DeviceProbe = async (d) => {
      if (d !== "cuda") throw new Error(`unexpected probe ${d}`);
      return (cuda ??= await real("cuda").catch((e) => ({ ok: false, detail: String(e?.message ?? e) })));
    };
    const auto = await chooseDevice("auto", once);
    if (cuda!.ok) {
      expect(auto.device).toBe("cuda");
      expect((await chooseDevice("cuda", once)).device).toBe("cuda");
    } else {
      // The expected case on these machines: onnxruntime-node without its CUDA libraries.
      expect(auto.device).toBe("cpu");
      expect(cuda!.detail).toMatch(/cuda/i);
      await expect(chooseDevice("cuda", once)).rejects.toMatchObject({ code: "DEVICE_UNAVAILABLE" });
    }
  });
});
