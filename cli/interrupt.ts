/**
 * Ctrl-C (SIGINT) and SIGTERM for every command, in one place. On the first signal:
 *  1. `interruption` aborts, so code that takes it (e.g. `stackUp`) stops what it launched;
 *  2. the workflows this process started and that still run are terminated, with their running
 *     children; any that could not be are listed with the command that stops them; from then on a
 *     start fails (`refuseStarts`), and one already on its way when the signal came is terminated;
 *  3. the cleanups registered with `onInterrupt` run, newest first;
 *  4. the command gets a short grace to unwind (its in-process workers shut down: the Temporal
 *     runtime hears the same signal), then the process exits 130 (SIGINT) or 143 (SIGTERM).
 * A second signal exits at once, naming what may still run.
 */
import type { Config } from '../infra/config.js';
import { onWorkflowStarted, refuseStarts, terminateRunning, type StartedWorkflow } from '../infra/temporal/started-workflows.js';

const exitCodes = { SIGINT: 130, SIGTERM: 143 } as const;
type HandledSignal = keyof typeof exitCodes;
/** How long the command may take to unwind after its workflows were terminated and cleanups ran. */
const UNWIND_GRACE_MS = 10_000;

const controller = new AbortController();
/** Aborted on the first SIGINT or SIGTERM; its reason is an Error naming the signal. */
export const interruption: AbortSignal = controller.signal;

const cleanups: { description: string; run: () => Promise<void> }[] = [];

/** Run `cleanup` if the command is interrupted (described in the message if it fails); returns the unregister. */
export function onInterrupt(description: string, cleanup: () => Promise<void> | void): () => void {
  const entry = {
    description,
    run: async () => {
      await cleanup();
    },
  };
  cleanups.push(entry);
  return () => {
    const index = cleanups.indexOf(entry);
    if (index >= 0) cleanups.splice(index, 1);
  };
}

/** True once a signal was received: the command's own failure is then the interruption's, not an error to report. */
export function isInterrupted(): boolean {
  return controller.signal.aborted;
}

/**
 * Install the handlers for one command run. `command` is its promise (awaited briefly when
 * interrupted); `settings` gives the Temporal address, read only when there is something to terminate.
 */
const terminateReason = (signal: HandledSignal) => `longhaul ${process.argv[2] ?? ''} interrupted by ${signal}`;

export function handleInterrupts(command: Promise<unknown>, settings: () => Config): void {
  const started = new Map<string, StartedWorkflow>();
  let received: HandledSignal | undefined;
  let swept = false;
  onWorkflowStarted((workflow) => {
    started.set(workflow.workflowId, workflow);
    // A start that was already on its way to the server when the signal came, and landed after the sweep.
    if (swept)
      void terminateRunning(settings(), [workflow], terminateReason(received!)).then(
        (report) => {
          for (const id of report.terminated) console.error(`  terminated workflow ${id}`);
        },
        () => console.error(`  could not stop ${workflow.workflowId}; stop it with:\n${stopHint([workflow.workflowId])}`),
      );
  });
  const stopHint = (ids: readonly string[]) => ids.map((id) => `  ./longhaul temporal workflow terminate --workflow-id ${id}`).join('\n');

  const onSignal = (signal: HandledSignal) => {
    if (received) {
      const ids = [...started.keys()];
      console.error(
        `\nlonghaul: ${signal} again: quitting now.${ids.length ? ` These workflows it started may still be running; stop them with:\n${stopHint(ids)}` : ''}`,
      );
      process.exit(exitCodes[signal]);
    }
    received = signal;
    console.error(`\nlonghaul: ${signal} received, stopping what this command started (${signal} again to quit at once)…`);
    controller.abort(new Error(`interrupted by ${signal}`));
    // The command keeps running until it unwinds (a demo between two stages would start the next one).
    refuseStarts(new Error(`interrupted by ${signal}: no new workflow is started`));
    void (async () => {
      const workflows = [...started.values()];
      swept = true;
      if (workflows.length > 0) {
        try {
          const report = await terminateRunning(settings(), workflows, terminateReason(signal));
          for (const id of report.terminated) console.error(`  terminated workflow ${id}`);
          if (report.failed.length > 0) {
            console.error(
              `  could not terminate, may still be running:\n${report.failed.map((failure) => `  ${failure.workflowId}: ${failure.error}`).join('\n')}\n  stop them with:\n${stopHint(report.failed.map((failure) => failure.workflowId))}`,
            );
          }
          started.clear();
        } catch (error) {
          console.error(
            `  could not reach Temporal to stop the workflows this command started (${(error as Error).message}); stop them with:\n${stopHint(workflows.map((workflow) => workflow.workflowId))}`,
          );
        }
      }
      for (const cleanup of [...cleanups].reverse()) {
        await cleanup.run().catch((error: unknown) => console.error(`  ${cleanup.description} failed: ${(error as Error).message}`));
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        command.catch(() => undefined),
        new Promise((resolve) => {
          timer = setTimeout(resolve, UNWIND_GRACE_MS);
        }),
      ]);
      clearTimeout(timer);
      process.exit(exitCodes[signal]);
    })();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
}
