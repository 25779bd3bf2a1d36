/** A progress bar on a terminal; plain lines when output is a file or a CI log. */
export interface Progress {
  update(done: number, note?: string): void;
  /** The last line: `done` defaults to the total (a run cut short, e.g. fewer steps set while it ran, passes its own). */
  finish(note?: string, done?: number): void;
}

export interface ProgressOptions {
  /** Without a terminal, a line also when this long has passed since the last one and the note changed. @default 60000 */
  readonly plainEveryMs?: number;
  /** The clock (tests). */
  readonly now?: () => number;
}

/**
 * On a terminal, one bar redrawn in place. Otherwise a line at each tenth of the total and, between
 * them, at most one a minute while the note changes: a step of RL can take ten minutes, and a log
 * that says nothing for that long looks like a hang.
 */
export function progressBar(
  label: string,
  total: number,
  stream: Pick<NodeJS.WriteStream, 'isTTY' | 'write'> = process.stderr,
  options: ProgressOptions = {},
): Progress {
  const now = options.now ?? Date.now;
  const plainEveryMs = options.plainEveryMs ?? 60_000;
  const startedAt = now();
  let lastPlainPercent = -1;
  let lastPlainAt = startedAt;
  let lastPlainNote = '';
  const render = (done: number, note = '') => {
    const at = now();
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    const elapsed = (at - startedAt) / 1000;
    const eta = fraction > 0 && fraction < 1 ? ` eta ${Math.round((elapsed / fraction) * (1 - fraction))}s` : '';
    if (stream.isTTY) {
      const width = 28;
      const filled = Math.round(fraction * width);
      stream.write(
        `\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${elapsed.toFixed(0)}s${eta} ${note}\x1b[K`,
      );
    } else {
      const percent = Math.floor(fraction * 10) * 10;
      if (percent !== lastPlainPercent || (at - lastPlainAt >= plainEveryMs && note !== lastPlainNote)) {
        lastPlainPercent = percent;
        lastPlainAt = at;
        lastPlainNote = note;
        stream.write(`${label}: ${done}/${total} (${percent}%) ${elapsed.toFixed(0)}s ${note}\n`);
      }
    }
  };
  return {
    update: render,
    finish(note, done = total) {
      render(done, note);
      if (stream.isTTY) stream.write('\n');
    },
  };
}
