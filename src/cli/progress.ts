import { escapeControls } from "../core/terminal.ts";
import { SingleBar } from "cli-progress";

/** Redraws through cli-progress; its timer is unref'd so a bar never holds the process open. */
class Bar extends SingleBar {
  override render(...args: unknown[]): void {
    (SingleBar.prototype.render as (...a: unknown[]) => void).apply(this, args);
    (this as unknown as { timer?: { unref?: () => void } }).timer?.unref?.();
  }
}

/**
 * A one-line progress bar on stderr when it is a terminal; plain periodic lines (every 2 s, and
 * the last state at `done()`) otherwise, so logs and CI keep a readable history instead of
 * carriage-return noise. Drawing is cli-progress's; `write` is where it goes (stderr, or a test).
 * After `done()` the next `update()` starts a new bar.
 */
export class ProgressBar {
  private readonly bar: Bar;
  private running = false;

  constructor(write: (s: string) => void, tty: boolean | undefined, width = 30) {
    const stream = { isTTY: Boolean(tty), columns: 120, write: (s: string) => (write(s), true) };
    this.bar = new Bar({
      stream: stream as unknown as NodeJS.WritableStream,
      format: "[{bar}] {percentage}% {label}",
      barsize: width,
      barCompleteChar: "#",
      barIncompleteChar: "-",
      noTTYOutput: true,
      notTTYSchedule: 2000,
      hideCursor: false,
      linewrap: false,
      gracefulExit: false,
      autopadding: true,
    });
  }

  update(done: number, total: number, label: string): void {
    // Labels carry file names: never raw control bytes on the terminal.
    const payload = { label: escapeControls(label).slice(0, 80) };
    if (!this.running) {
      this.running = true;
      this.bar.start(Math.max(total, 0), done, payload);
      return;
    }
    this.bar.setTotal(Math.max(total, 0));
    this.bar.update(done, payload);
  }

  done(): void {
    if (!this.running) return;
    this.running = false;
    this.bar.stop();
  }
}
