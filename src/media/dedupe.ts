/**
 * Near-duplicate dropping for sampled frames: a static shot sampled once a second yields dozens of
 * identical embeddings that cost model time and crowd search results. The metric is deliberately
 * cheap: a 16×16 block-averaged luma signature per frame (one pass over the pixels), compared by
 * mean absolute difference on the 0..255 scale.
 */
export interface DedupeOptions {
  /** Keep a frame when its signature differs from the last kept one by at least this. Default 3. */
  minDiff?: number;
  /** Keep a frame anyway once this many seconds passed since the last kept one. Default 4. */
  maxGapSecs?: number;
  /** Frame width in pixels; default: frames are square (CLIP input), side = sqrt(length / 3). */
  width?: number;
}

/** What dropNearDuplicates needs from a frame; SampledFrame fits. */
export interface DedupeFrame {
  timestamp: number;
  rgb: Uint8Array;
  /** A shot-boundary frame: always kept. */
  forced?: boolean;
}

export interface DedupeStats {
  kept: number;
  dropped: number;
}

export interface DedupeStream<F> extends AsyncIterable<F> {
  readonly stats: DedupeStats;
}

export const SIGNATURE_SIDE = 16;

/**
 * Streaming transform: passes frames through in order, dropping each one that is nearly identical
 * to the last *kept* frame — unless it is a shot-boundary frame (`forced`), or `maxGapSecs` have
 * passed since the last kept frame (so a long static shot still gets a frame every few seconds and
 * search can point into it). The first frame is always kept. Holds one signature, never frames.
 */
export function dropNearDuplicates<F extends DedupeFrame>(
  frames: AsyncIterable<F>,
  opts: DedupeOptions = {},
): DedupeStream<F> {
  const minDiff = opts.minDiff ?? 3;
  const maxGap = opts.maxGapSecs ?? 4;
  const stats: DedupeStats = { kept: 0, dropped: 0 };
  async function* run(): AsyncGenerator<F> {
    let last: Float32Array | null = null;
    let lastTime = -Infinity;
    for await (const frame of frames) {
      const sig = lumaSignature(frame.rgb, opts.width);
      const keep =
        last === null ||
        frame.forced === true ||
        frame.timestamp - lastTime >= maxGap - 1e-6 ||
        signatureDistance(sig, last) >= minDiff;
      if (!keep) {
        stats.dropped++;
        continue;
      }
      last = sig;
      lastTime = frame.timestamp;
      stats.kept++;
      yield frame;
    }
  }
  return { stats, [Symbol.asyncIterator]: run };
}

/**
 * 16×16 block means of luma (BT.601 weights, integer approximation). Works for any frame size ≥ 1;
 * blocks are formed by integer division, so an odd size just makes some blocks one pixel larger.
 */
export function lumaSignature(rgb: Uint8Array, width?: number): Float32Array {
  const w = width ?? Math.round(Math.sqrt(rgb.length / 3));
  const h = Math.floor(rgb.length / 3 / w);
  if (w < 1 || h < 1 || w * h * 3 !== rgb.length)
    throw new RangeError(`frame of ${rgb.length} bytes is not ${w} px wide RGB`);
  const n = SIGNATURE_SIDE;
  const sums = new Float64Array(n * n);
  const counts = new Uint32Array(n * n);
  for (let y = 0; y < h; y++) {
    const by = Math.min(n - 1, Math.floor((y * n) / h)) * n;
    let p = y * w * 3;
    for (let x = 0; x < w; x++, p += 3) {
      const b = by + Math.min(n - 1, Math.floor((x * n) / w));
      sums[b] += (77 * rgb[p] + 150 * rgb[p + 1] + 29 * rgb[p + 2]) >> 8;
      counts[b]++;
    }
  }
  const sig = new Float32Array(n * n);
  for (let i = 0; i < sig.length; i++) sig[i] = counts[i] ? sums[i] / counts[i] : 0;
  return sig;
}

/** Mean absolute difference between two signatures (0 = identical, 255 = black vs white). */
export function signatureDistance(a: Float32Array, b: Float32Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += Math.abs(a[i] - b[i]);
  return d / a.length;
}
