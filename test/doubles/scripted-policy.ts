/**
 * A deterministic policy for tests and benchmarks, behind the real PolicyBackend port. The script
 * rides in the question: `script:{"turns":N,"answer":"…","delayMs":…,"tokenDelayMs":…,"invalidEvery":…}`.
 * It searches for N-1 turns and then answers; the answer "@observation" answers with the first line of
 * the last tool observation (so the answer depends on what the tools said). `tokenDelayMs` makes generation take time token by
 * token, so interruptions and kills can land mid-generation. A request's `forcedText` is the output as given.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { GenerateRequest, GenerateResult, PolicyBackend } from '../../activities/ports/policy.port.js';

interface Script {
  turns: number;
  answer: string;
  delayMs: number;
  tokenDelayMs: number;
  invalidEvery: number;
  vary: boolean;
}

function readScript(prompt: string): Script {
  const match = /script:(\{[^\n<]*\})/.exec(prompt);
  let parsed: Partial<Script> = {};
  try {
    parsed = match ? (JSON.parse(match[1]!) as Partial<Script>) : {};
  } catch {
    parsed = {};
  }
  return {
    turns: parsed.turns ?? 3,
    answer: parsed.answer ?? 'scripted answer',
    delayMs: parsed.delayMs ?? 0,
    tokenDelayMs: parsed.tokenDelayMs ?? 0,
    invalidEvery: parsed.invalidEvery ?? 0,
    vary: parsed.vary === true,
  };
}

/** Turns already taken, from the prompt: one observation per turn, plus any omitted ones. */
function turnsTaken(prompt: string): number {
  const omitted = /\[(\d+) earlier steps omitted\]/.exec(prompt);
  return (prompt.match(/\n<\/information>\n/g)?.length ?? 0) + (omitted ? Math.floor(Number(omitted[1]) / 2) : 0);
}

/** The first line of the last <information> block of the prompt ('' when there is none). */
function lastObservation(prompt: string): string {
  const blocks = [...prompt.matchAll(/<information>\n([^\n]*)/g)];
  return blocks.length > 0 ? blocks[blocks.length - 1]![1]!.trim() : '';
}

export function createScriptedPolicy(options: { version?: () => number } = {}): PolicyBackend {
  const version = options.version ?? (() => 0);
  return {
    name: 'scripted',
    async currentVersion() {
      return version();
    },
    async capabilities() {
      return { tokenIds: true, logprobs: true, detail: 'the scripted policy tags every character as a token with logprob -0.5' };
    },
    async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
      const script = readScript(request.prompt);
      const turn = turnsTaken(request.prompt);
      const text =
        request.forcedText ??
        (turn + 1 >= script.turns
          ? `<think>done after ${turn} searches</think>\n<answer>${script.answer === '@observation' ? lastObservation(request.prompt) : script.answer}</answer>`
          : script.invalidEvery > 0 && (turn + 1) % script.invalidEvery === 0
            ? `<search>unclosed step ${turn}`
            : script.vary && (request.temperature ?? 0) > 0
              ? `<think>step ${turn}</think>\n<search>query ${turn} seed ${request.seed ?? 0}</search>`
              : `<think>step ${turn}</think>\n<search>query ${turn}</search>`);
      if (script.delayMs > 0) await sleep(script.delayMs);
      const prefix = [...(request.prefixTokenIds ?? [])];
      const tokenIds = [...prefix];
      const tokenVersions: number[] = prefix.map(() => -1);
      const all = [...text].map((character) => character.codePointAt(0)!);
      for (let index = prefix.length; index < all.length && index < prefix.length + request.maxNewTokens; index += 1) {
        if (signal?.aborted) return result('interrupted');
        if (script.tokenDelayMs > 0) await sleep(script.tokenDelayMs);
        tokenIds.push(all[index]!);
        tokenVersions.push(version());
      }
      return result(tokenIds.length >= all.length ? 'stop' : 'length');

      function result(finishReason: GenerateResult['finishReason']): GenerateResult {
        return {
          text: String.fromCodePoint(...tokenIds),
          promptTokenIds: [...request.prompt.slice(0, 64)].map((character) => character.codePointAt(0)!),
          tokenIds: [...tokenIds],
          logprobs: tokenIds.map(() => -0.5),
          tokenVersions: tokenVersions.map((tagged) => (tagged < 0 ? version() : tagged)),
          policyVersion: version(),
          finishReason,
        };
      }
    },
  };
}
