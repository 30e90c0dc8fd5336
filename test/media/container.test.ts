import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { containerOf, ebmlDocType, looksLikeVideoContainer } from "../../src/media/container.ts";
import { gconvGuardContents, gconvGuardDir } from "../../src/media/gconv.ts";
import { frameRateOf } from "../../src/media/probe.ts";
import { makeTempDir, removeDir } from "../helpers/temp.ts";

const bytes = (...parts: (string | number[])[]) =>
  new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...p].map((c) => c.charCodeAt(0)) : p)));

// An EBML header: magic, header size, then DocType (0x4282) with a 1-byte vint length.
const ebml = (docType: string) =>
  bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x80 | docType.length], docType);

describe("containerOf", () => {
  const none = new Uint8Array(0);
  it("splits the ISO-BMFF family by major brand", () => {
    const iso = "mov,mp4,m4a,3gp,3g2,mj2";
    expect(containerOf(iso, "isom", none)).toBe("mp4");
    expect(containerOf(iso, "mp42", none)).toBe("mp4");
    expect(containerOf(iso, "3gp4", none)).toBe("mp4");
    expect(containerOf(iso, "qt  ", none)).toBe("mov");
    expect(containerOf(iso, null, none)).toBe("mov");
    expect(containerOf(iso, "heic", none)).toBeNull();
    expect(containerOf(iso, "avif", none)).toBeNull();
  });

  it("tells WebM from Matroska by DocType", () => {
    expect(containerOf("matroska,webm", null, ebml("webm"))).toBe("webm");
    expect(containerOf("matroska,webm", null, ebml("matroska"))).toBe("mkv");
    expect(ebmlDocType(ebml("webm"))).toBe("webm");
    expect(ebmlDocType(bytes("not ebml at all"))).toBeNull();
  });

  it("maps program and transport streams to mpeg and refuses everything else", () => {
    expect(containerOf("mpeg", null, none)).toBe("mpeg");
    expect(containerOf("mpegts", null, none)).toBe("mpeg");
    expect(containerOf("avi", null, none)).toBe("avi");
    for (const f of ["png_pipe", "image2", "gif", "mp3", "wav", "mpegvideo", "h264", "tty", "webvtt"]) {
      expect(containerOf(f, null, none)).toBeNull();
    }
  });
});

describe("looksLikeVideoContainer", () => {
  it("recognises container magic and nothing else", () => {
    expect(looksLikeVideoContainer(bytes([0, 0, 0, 0x18], "ftypisom"))).toBe(true);
    expect(looksLikeVideoContainer(bytes("RIFF", [1, 2, 3, 4], "AVI LIST"))).toBe(true);
    expect(looksLikeVideoContainer(ebml("webm"))).toBe(true);
    expect(looksLikeVideoContainer(bytes([0, 0, 1, 0xba, 0x44]))).toBe(true);
    const ts = new Uint8Array(400);
    ts[0] = ts[188] = ts[376] = 0x47;
    expect(looksLikeVideoContainer(ts)).toBe(true);
    expect(looksLikeVideoContainer(bytes("hello, this is text"))).toBe(false);
    expect(looksLikeVideoContainer(bytes([0x89], "PNG\r\n\x1a\n"))).toBe(false);
    expect(looksLikeVideoContainer(new Uint8Array(0))).toBe(false);
  });
});

describe("frameRateOf", () => {
  it("prefers avg_frame_rate unless it is implausible", () => {
    expect(frameRateOf({ avg_frame_rate: "24/1", r_frame_rate: "30/1" })).toBe(24);
    expect(frameRateOf({ avg_frame_rate: "25/1", r_frame_rate: "50/1" })).toBe(25); // MPEG-1 field rate
    expect(frameRateOf({ avg_frame_rate: "1000/1", r_frame_rate: "60/1" })).toBe(60); // Matroska 1 ms base
    expect(frameRateOf({ avg_frame_rate: "0/0", r_frame_rate: "30000/1001" })).toBeCloseTo(29.97, 2);
    expect(frameRateOf({ avg_frame_rate: "0/0", r_frame_rate: "0/0" })).toBeNull();
  });
});

describe("gconv guard", () => {
  it("aliases the DVB charsets away and writes its file once, atomically", () => {
    const text = gconvGuardContents();
    expect(text).toMatch(/^alias\tISO6937\/\/\tVSEARCH-NO-ICONV\/\/$/m);
    expect(text).toMatch(/^alias\tISO-8859-15\/\//m);
    expect(text).not.toMatch(/^module/m);
    const base = makeTempDir("gconv-test-");
    try {
      const dir = gconvGuardDir(base);
      expect(readFileSync(join(dir, "gconv-modules"), "utf8")).toBe(text);
      expect(gconvGuardDir(base)).toBe(dir);
    } finally {
      removeDir(base);
    }
  });
});
