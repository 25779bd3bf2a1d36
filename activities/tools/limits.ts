/**
 * Per-tool limits under stress: a time limit for each attempt, a cap on calls running at once, a
 * rate limit (calls started per second), retries with exponential backoff that wait at least as
 * long as a server's `Retry-After`, and one deadline for the whole call (waiting for a slot, every
 * attempt and every pause included) that stays under the tools activity's own time limit.
 *
 * A call that runs out of attempts or time is not an exception for the trajectory: it becomes a
 * ToolFailure, which the runner turns into an ok=false observation the agent reads ("web_search is
 * unavailable: …; try again later or use another tool"), and the trajectory goes on.
 * Limits hold per worker process: N tools workers allow N × concurrency calls and N × qps.
 */
import { isTransient, ToolUnavailable } from '../ports/tool-errors.port.js';
import { ToolFailure, type AnyToolPlugin, type ToolOutput } from './registry.js';

export interface ToolLimits {
  /** Time limit of one attempt, in ms. */
  readonly timeoutMs: number;
  /** Attempts after the first one, for failures that may pass (429, 5xx, timeouts, dropped connections). */
  readonly retries: number;
  /** Calls of this tool running at once in one worker; more wait for a slot. */
  readonly concurrency: number;
  /** Calls started per second in one worker (attempts included); 0: no limit. */
  readonly qps: number;
  /** Time limit of the whole call (slot, rate limit, attempts, pauses), in ms. */
  readonly deadlineMs: number;
  /** First pause between attempts, in ms; doubled for each further one (with jitter), never shorter than Retry-After. */
  readonly backoffMs: number;
}

export const defaultToolLimits: ToolLimits = {
  timeoutMs: 30_000,
  retries: 2,
  concurrency: 8,
  qps: 0,
  deadlineMs: 90_000,
  backoffMs: 500,
};

/** Clock and randomness, replaceable in tests. */
export interface LimitEnvironment {
  readonly now: () => number;
  readonly random: () => number;
}

const systemEnvironment: LimitEnvironment = { now: () => Date.now(), random: () => Math.random() };

/** A plug-in with the same name, schema and judge whose execute applies `limits`. */
export function limitTool(plugin: AnyToolPlugin, limits: ToolLimits, environment: LimitEnvironment = systemEnvironment): AnyToolPlugin {
  const slots = new Slots(limits.concurrency);
  let nextStart = 0;

  /** Waits for this call's turn under the rate limit; false when that turn comes after the deadline. */
  async function rateSlot(deadline: number): Promise<boolean> {
    if (limits.qps <= 0) return true;
    const now = environment.now();
    const start = Math.max(now, nextStart);
    if (start > deadline) return false;
    nextStart = start + 1000 / limits.qps;
    if (start > now) await pause(start - now);
    return true;
  }

  async function attempt(input: unknown, timeoutMs: number): Promise<ToolOutput> {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new ToolUnavailable(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([plugin.execute(input, { signal: controller.signal }), timedOut]);
    } catch (error) {
      if (controller.signal.aborted) throw new ToolUnavailable(`no answer within ${timeoutMs} ms`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    ...plugin,
    limits,
    async execute(input: unknown): Promise<ToolOutput> {
      const startedAt = environment.now();
      const deadline = startedAt + limits.deadlineMs;
      const seconds = () => ((environment.now() - startedAt) / 1000).toFixed(1);
      const unavailable = (reason: string, attempts: number) =>
        new ToolFailure(
          `Error: ${plugin.name} is unavailable: ${reason} (${attempts} attempt${attempts === 1 ? '' : 's'} in ${seconds()} s). Try again later or use another tool.`,
        );
      if (!(await slots.acquire(deadline - environment.now())))
        throw unavailable(`${limits.concurrency} calls were already running and none finished within ${limits.deadlineMs} ms`, 0);
      try {
        for (let attempts = 1; ; attempts += 1) {
          if (!(await rateSlot(deadline)))
            throw unavailable(`its rate limit (${limits.qps} calls a second) left no turn in time`, attempts - 1);
          const remaining = deadline - environment.now();
          if (remaining <= 0) throw unavailable(`no time left within ${limits.deadlineMs} ms`, attempts - 1);
          try {
            return await attempt(input, Math.min(limits.timeoutMs, remaining));
          } catch (error) {
            if (!isTransient(error)) throw error;
            const reason = error.message;
            if (attempts > limits.retries) throw unavailable(reason, attempts);
            const backoff = limits.backoffMs * 2 ** (attempts - 1) * (0.5 + environment.random() / 2);
            const asked = error.retryAfterMs ?? null;
            const wait = Math.max(backoff, asked ?? 0);
            if (environment.now() + wait >= deadline) {
              const why = asked !== null && asked >= backoff ? `${reason}; the server asks to wait ${Math.ceil(asked / 1000)} s` : reason;
              throw unavailable(`${why}, longer than the ${limits.deadlineMs} ms this call may take`, attempts);
            }
            await pause(wait);
          }
        }
      } finally {
        slots.release();
      }
    },
  };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A counting semaphore whose waiters give up after a time. */
class Slots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  acquire(withinMs: number): Promise<boolean> {
    if (this.running < this.size) {
      this.running += 1;
      return Promise.resolve(true);
    }
    if (withinMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.running += 1;
        resolve(true);
      };
      const timer = setTimeout(() => {
        const index = this.waiting.indexOf(wake);
        if (index >= 0) this.waiting.splice(index, 1);
        resolve(false);
      }, withinMs);
      this.waiting.push(wake);
    });
  }

  release(): void {
    this.running -= 1;
    this.waiting.shift()?.();
  }
}
