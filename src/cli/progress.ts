import { escapeControls } from "../core/terminal.ts";

/**
 * A one-line progress bar on stderr when it is a terminal; plain periodic lines otherwise (logs
 * and CI keep a readable history instead of carriage-return noise).
 */
export class ProgressBar {
  private lastLine = 0;
  private readonly tty: boolean;

  constructor(
    private readonly write: (s: string) => void,
    tty: boolean | undefined,
    private readonly width = 30,
  ) {
    this.tty = Boolean(tty);
  }

  update(done: number, total: number, label: string): void {
    const frac = total > 0 ? Math.min(1, done / total) : 0;
    const filled = Math.round(frac * this.width);
    // Labels carry file names: never raw control bytes on the terminal.
    const bar = `[${"#".repeat(filled)}${"-".repeat(this.width - filled)}] ${(frac * 100).toFixed(0).padStart(3)}% ${escapeControls(label)}`;
    if (this.tty) this.write(`\r${bar.slice(0, 120).padEnd(120)}`);
    else if (Date.now() - this.lastLine > 2000 || frac >= 1) {
      this.lastLine = Date.now();
      this.write(`${bar}\n`);
    }
  }

  done(): void {
    if (this.tty) this.write("\n");
  }
}
