import type { Container } from "../media/container.ts";

/** What the decision looks at: the probed container and the first video and audio streams. */
export interface PlaybackSource {
  container: Container | null;
  /** ffprobe codec names: "h264", "hevc", "mpeg4", "mpeg2video", "mpeg1video", "h263", "vp9", … */
  videoCodec: string | null;
  pixFmt: string | null;
  audioCodec: string | null;
}

export interface RenditionDecision {
  needed: boolean;
  /** One sentence for the video record and the logs. */
  reason: string;
}

/**
 * What Chromium plays, per container (checked against Chromium 156 on the shared clips with
 * bench/playback-bench.ts; see docs/INGEST.md "Playback"). MP4 (ISO BMFF, 3GP included: the same
 * box format) and WebM are the containers of the web. A WebM is a Matroska file, and Chromium's
 * WebM parser takes one with DocType "matroska" as long as its codecs are WebM's (a VP9 `.webm`
 * written with that DocType plays), so such an MKV is direct too; an MKV with H.264, AAC or AC-3
 * is not a WebM and is not counted on. AVI, MPEG-PS and MPEG-TS have no demuxer in Chromium
 * (MediaError 4); MOV is not counted on either (only where its codecs happen to be MP4's).
 */
const WEBM_VIDEO = ["vp8", "vp9", "av1"];
const WEBM_AUDIO = ["opus", "vorbis"];
const DIRECT_VIDEO: Partial<Record<Container, readonly string[]>> = {
  mp4: ["h264", "av1", "vp9"],
  webm: WEBM_VIDEO,
  mkv: WEBM_VIDEO,
};
const DIRECT_AUDIO: Partial<Record<Container, readonly string[]>> = {
  mp4: ["aac", "mp3", "opus", "flac"],
  webm: WEBM_AUDIO,
  mkv: WEBM_AUDIO,
};

/** H.264 a browser decodes in software: 8-bit 4:2:0 (High 10, 4:2:2 and 4:4:4 profiles are not). */
const H264_8BIT_420 = new Set(["yuv420p", "yuvj420p"]);
/** VP9/AV1 depth and chroma Chromium decodes (profile 0 and profile 2, i.e. 8/10-bit 4:2:0). */
const VPX_AV1_OK = new Set(["yuv420p", "yuvj420p", "yuv420p10le"]);

/**
 * Whether a source needs a web rendition (H.264 + AAC in MP4) to play in a browser. Decided from
 * codecs and container, never by trying: a try would need a browser on the server. Pure; the table
 * is in docs/INGEST.md and test/playback/decision.test.ts.
 */
export function decideRendition(s: PlaybackSource): RenditionDecision {
  const container = s.container;
  const v = s.videoCodec ?? "none";
  if (!container || !DIRECT_VIDEO[container]) {
    return { needed: true, reason: `${container ?? "unknown"} container: browsers cannot demux it` };
  }
  if (container === "mkv" && !DIRECT_VIDEO.mkv!.includes(v)) {
    return {
      needed: true,
      reason: `${v} video in mkv: browsers play Matroska only with WebM's codecs (VP8/VP9/AV1, Opus/Vorbis)`,
    };
  }
  if (container === "mkv" && s.audioCodec && !DIRECT_AUDIO.mkv!.includes(s.audioCodec)) {
    return {
      needed: true,
      reason: `${s.audioCodec} audio in mkv: browsers play Matroska only with WebM's codecs (VP8/VP9/AV1, Opus/Vorbis)`,
    };
  }
  if (!DIRECT_VIDEO[container]!.includes(v)) {
    return {
      needed: true,
      reason: `${v} video in ${container}: browsers do not decode it (${WHY_NOT[v] ?? "not a web codec"})`,
    };
  }
  const pix = s.pixFmt ?? "";
  if (v === "h264" && !H264_8BIT_420.has(pix)) {
    return { needed: true, reason: `h264 with ${pix || "unknown"} pixels: browsers decode only 8-bit 4:2:0 H.264` };
  }
  if (v !== "h264" && pix && !VPX_AV1_OK.has(pix)) {
    return { needed: true, reason: `${v} with ${pix} pixels: browsers decode only 4:2:0 at 8 or 10 bits` };
  }
  if (s.audioCodec && !DIRECT_AUDIO[container]!.includes(s.audioCodec)) {
    return {
      needed: true,
      reason: `${s.audioCodec} audio in ${container}: browsers do not decode it (${WHY_NOT[s.audioCodec] ?? "not a web codec"})`,
    };
  }
  return {
    needed: false,
    reason: `${v}${s.audioCodec ? ` + ${s.audioCodec}` : ""} in ${container} plays in browsers as it is`,
  };
}

const WHY_NOT: Record<string, string> = {
  mpeg4: "MPEG-4 Part 2 was never a web codec",
  mpeg2video: "MPEG-2 is a broadcast/DVD codec",
  mpeg1video: "MPEG-1 is not in any browser",
  h263: "H.263 plays as audio only",
  hevc: "HEVC needs a platform decoder Chromium on Linux does not have",
  ac3: "AC-3 is licensed, not in Chromium",
  eac3: "E-AC-3 is licensed, not in Chromium",
  mp2: "MPEG-1 Layer II is not in Chromium",
  amr_nb: "AMR is a phone codec, not in Chromium",
  pcm_s16le: "PCM is not allowed in MP4 by Chromium",
};
