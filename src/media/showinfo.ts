/**
 * Parsing of ffmpeg 4.1's `showinfo` lines (stderr, run with `-loglevel repeat+level+info`):
 *
 *   [Parsed_showinfo_3 @ 0x1a2b] [info] config in time_base: 1/12800, frame_rate: 25/1
 *   [Parsed_showinfo_3 @ 0x1a2b] [info] n:   4 pts:  42496 pts_time:3.32  pos: ... iskey:0 type:P ...
 *
 * Times are computed as pts × time_base, not read from pts_time: pts_time is printed with "%g"
 * (6 significant digits), which is only 0.1 s precise past 10 000 s — a 3-hour film.
 */
export interface ShowinfoFrame {
  /** Output index of the frame (showinfo's n). */
  n: number;
  /** Presentation time in seconds; NaN when the frame had no pts. */
  time: number;
  keyframe: boolean;
}

/**
 * A small stateful parser (one per ffmpeg run): it remembers the time base it was configured with.
 * `instance`: read only the lines of the filter written `showinfo@<instance>` in the graph (a graph
 * with two showinfo filters, e.g. the frame sampler's and the cut analysis'); without it, only
 * unnamed ones (`Parsed_showinfo_N`).
 */
export function createShowinfoParser(instance?: string): (line: string) => ShowinfoFrame | null {
  if (instance !== undefined && !/^\w+$/.test(instance))
    throw new RangeError("showinfo instance names are word characters");
  const tag = instance === undefined ? "Parsed_showinfo_" : `showinfo@${instance} @`;
  const name = instance === undefined ? String.raw`Parsed_showinfo_\d+ @` : `showinfo@${instance} @`;
  const CONFIG_RE = new RegExp(String.raw`${name} [^\]]+\] (?:\[\w+\] )?config in time_base: (\d+)\/(\d+)`);
  const FRAME_RE = new RegExp(
    String.raw`${name} [^\]]+\] (?:\[\w+\] )?n:\s*(\d+)\s+pts:\s*(-?\d+|NOPTS)\s+pts_time:(\S+)(?:.*?\biskey:(\d))?`,
  );
  let num = 0;
  let den = 0;
  return (line) => {
    if (!line.includes(tag)) return null;
    const c = CONFIG_RE.exec(line);
    if (c) {
      num = Number(c[1]);
      den = Number(c[2]);
      return null;
    }
    const m = FRAME_RE.exec(line);
    if (!m) return null;
    let time: number;
    if (m[2] === "NOPTS") time = NaN;
    else if (num > 0 && den > 0) time = (Number(m[2]) * num) / den;
    else time = Number(m[3]);
    return { n: Number(m[1]), time, keyframe: m[4] === "1" };
  };
}

/** ffmpeg error-level log lines (decoder/demuxer complaints), as opposed to our showinfo output. */
export function isErrorLine(line: string): boolean {
  return /\[(error|fatal)\]/.test(line) && !line.includes("Parsed_showinfo_") && !line.includes("showinfo@");
}
