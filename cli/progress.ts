/** A progress bar on a terminal; periodic plain lines when output is a file or a CI log. */
export interface Progress {
  update(done: number, note?: string): void;
  finish(note?: string): void;
}

export function progressBar(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  const startedAt = Date.now();
  let lastPlainPercent = -1;
  const render = (done: number, note = '') => {
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    const elapsed = (Date.now() - startedAt) / 1000;
    const eta = fraction > 0 && fraction < 1 ? ` eta ${Math.round((elapsed / fraction) * (1 - fraction))}s` : '';
    if (stream.isTTY) {
      const width = 28;
      const filled = Math.round(fraction * width);
      stream.write(
        `\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${elapsed.toFixed(0)}s${eta} ${note}\x1b[K`,
      );
    } else {
      const percent = Math.floor(fraction * 10) * 10;
      if (percent !== lastPlainPercent) {
        lastPlainPercent = percent;
        stream.write(`${label}: ${done}/${total} (${percent}%) ${elapsed.toFixed(0)}s ${note}\n`);
      }
    }
  };
  return {
    update: render,
    finish(note) {
      render(total, note);
      if (stream.isTTY) stream.write('\n');
    },
  };
}
