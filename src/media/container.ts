/**
 * Which container a file is, decided from ffprobe's `format_name` plus a few header bytes — never
 * from the file name (ffprobe itself falls back to the extension when content probing fails, which
 * is why a text file named .mp4 reaches the mov demuxer and fails with "moov atom not found").
 */
export type Container = "mp4" | "mov" | "avi" | "webm" | "mkv" | "mpeg";

export const CONTAINER_MIME: Record<Container, string> = {
  mp4: "video/mp4",
  mov: "video/quicktime",
  avi: "video/x-msvideo",
  webm: "video/webm",
  mkv: "video/x-matroska",
  mpeg: "video/mpeg",
};

/**
 * ISO-BMFF brands of still-image formats (HEIF/HEIC/AVIF). ffprobe opens them with the mov demuxer
 * and may even show a video stream; they are photos, not videos.
 */
const IMAGE_BRANDS = new Set(["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1", "avif", "avis", "avio"]);

/**
 * Maps ffprobe's demuxer name (+ ISO major brand, + Matroska DocType) onto the six accepted
 * containers, or null.
 *
 * - `mov,mp4,m4a,3gp,3g2,mj2` is one demuxer for all ISO-BMFF files. Brand `qt` or no ftyp at all
 *   (old QuickTime) → mov. 3GP/3G2 (brands `3gp*`, `3g2*`, phones), M4V, DASH, F4V and Motion
 *   JPEG 2000 → mp4: they are the same box structure and ffmpeg decodes them the same way, so
 *   rejecting them would only refuse valid phone videos. HEIF/AVIF image brands → null.
 * - `matroska,webm` is one demuxer; the EBML DocType tells WebM from Matroska.
 * - `mpeg` (program stream, .mpg/.vob) and `mpegts` (transport stream, .ts/.m2ts) → mpeg.
 *   `mpegvideo` (a bare MPEG-1/2 elementary stream, no container) is refused like bare h264:
 *   it has no timestamps, so durations and frame times would be guesses.
 */
export function containerOf(formatName: string, majorBrand: string | null, header: Uint8Array): Container | null {
  switch (formatName) {
    case "mov,mp4,m4a,3gp,3g2,mj2": {
      const brand = (majorBrand ?? "").trim().toLowerCase();
      if (IMAGE_BRANDS.has(brand)) return null;
      if (brand === "" || brand === "qt") return "mov";
      return "mp4";
    }
    case "matroska,webm":
    case "matroska":
    case "webm":
      return ebmlDocType(header) === "webm" ? "webm" : "mkv";
    case "avi":
      return "avi";
    case "mpeg":
    case "mpegts":
      return "mpeg";
    default:
      return null;
  }
}

/** The MIME type of what was actually found (a TS is not a PS, even if both are "mpeg"). */
export function mimeTypeOf(container: Container, formatName: string): string {
  return formatName === "mpegts" ? "video/mp2t" : CONTAINER_MIME[container];
}

/**
 * The EBML header's DocType ("webm" or "matroska"). It sits in the first few dozen bytes:
 * element id 0x4282, a variable-length size, then the ASCII string.
 */
export function ebmlDocType(header: Uint8Array): string | null {
  for (let i = 4; i + 3 < Math.min(header.length, 256); i++) {
    if (header[i] !== 0x42 || header[i + 1] !== 0x82) continue;
    const first = header[i + 2];
    let width = 1;
    while (width <= 8 && !(first & (0x80 >> (width - 1)))) width++;
    if (width > 8) return null;
    let size = first & (0xff >> width);
    for (let k = 1; k < width; k++) size = size * 256 + header[i + 2 + k];
    const start = i + 2 + width;
    if (size <= 0 || size > 32 || start + size > header.length) return null;
    return new TextDecoder().decode(header.subarray(start, start + size)).replace(/\0+$/, "");
  }
  return null;
}

/**
 * When ffprobe cannot open a file at all, do its first bytes claim to be one of our containers?
 * Yes → the file is a broken video (DECODE_FAILED); no → it is something else (UNSUPPORTED_FORMAT).
 */
export function looksLikeVideoContainer(h: Uint8Array): boolean {
  const ascii = (at: number, len: number) => String.fromCharCode(...h.subarray(at, at + len));
  if (h.length >= 8 && ["ftyp", "moov", "mdat", "free", "wide", "skip", "pnot"].includes(ascii(4, 4))) return true;
  if (h.length >= 12 && ascii(0, 4) === "RIFF" && ascii(8, 4) === "AVI ") return true;
  if (h.length >= 4 && h[0] === 0x1a && h[1] === 0x45 && h[2] === 0xdf && h[3] === 0xa3) return true;
  if (h.length >= 4 && h[0] === 0 && h[1] === 0 && h[2] === 1 && (h[3] === 0xba || h[3] === 0xb3)) return true;
  // Transport stream: sync byte every 188 bytes (or 192 for M2TS with its 4-byte prefix).
  if (h.length >= 377 && h[0] === 0x47 && h[188] === 0x47 && h[376] === 0x47) return true;
  if (h.length >= 389 && h[4] === 0x47 && h[196] === 0x47 && h[388] === 0x47) return true;
  return false;
}
