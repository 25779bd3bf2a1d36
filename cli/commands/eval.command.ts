import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { listEvaluationSets, loadQuestionSet } from '../../composition/question-sets.js';
import { toQuestionRow, type QuestionSet } from '../../activities/question-sets/question-set.js';
import { evaluationResultSchema, type EvaluationResult } from '../../activities/ports/evaluation-result.schema.js';
import { createPgEvaluationStore } from '../../infra/postgres/evaluation-store.pg.js';
import { stackUp } from '../../infra/services/stack.js';
import {
  evaluationKeys,
  evaluationStateQuery,
  evaluationWorkflowType,
  type EvaluationInput,
  type EvaluationOutcome,
  type EvaluationState,
} from '../../workflows/contracts/evaluation.contract.js';
import { parseEvaluationInput } from '../../workflows/contracts/evaluation.input.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import type { TrajectorySettings } from '../../workflows/contracts/trajectory.contract.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { followWorkflow } from '../follow-workflow.js';
import { preflight } from '../preflight.js';
import { progressBar } from '../progress.js';
import { repositoryCommit } from '../../composition/benchmark-runner.js';
import type { Services } from '../../composition/services.js';
import type { Config } from '../../infra/config.js';
import type { Client } from '@temporalio/client';
import { serveForEvaluation } from '../restart-inference.js';
import { compareEvaluations, type EvaluationComparison } from '../../activities/evaluation/compare.js';

/** The flags an evaluation takes, shared by `eval` and `schedule eval` (parseArgs options). */
export const evaluationFlagOptions = {
  dataset: { type: 'string' },
  layout: { type: 'string' },
  strict: { type: 'boolean' },
  k: { type: 'string', short: 'k' },
  limit: { type: 'string' },
  concurrency: { type: 'string' },
  judge: { type: 'boolean' },
  temperature: { type: 'string' },
  seed: { type: 'string' },
  'max-turns': { type: 'string' },
  'max-new-tokens': { type: 'string' },
  'max-observation-chars': { type: 'string' },
  'run-id': { type: 'string' },
} as const;

/** The flag behind each evaluation input field, for preflight refusals. */
export const evaluationFlags = {
  resultId: 'result-id',
  k: 'k',
  concurrency: 'concurrency',
  questions: 'limit',
  seed: 'seed',
  runId: 'run-id',
  'trajectory.limits.maxTurns': 'max-turns',
  'trajectory.limits.maxNewTokensPerTurn': 'max-new-tokens',
  'trajectory.options.temperature': 'temperature',
  'trajectory.options.maxObservationChars': 'max-observation-chars',
  trajectory: 'trajectory',
};

type EvaluationFlagValues = {
  [K in keyof typeof evaluationFlagOptions]?: (typeof evaluationFlagOptions)[K]['type'] extends 'boolean' ? boolean : string;
};

/**
 * The evaluation flags shared by `eval` and `schedule eval`, checked and resolved: the question set
 * (bad rows reported), its JSONL text and content hash, and the input fields that do not depend on
 * the policy version or the result id.
 */
export async function evaluationRequest(values: EvaluationFlagValues) {
  if (!values.dataset) throw new UsageError('--dataset NAME|FILE is required (a question-set file, or a set name: longhaul datasets list)');
  const k = integerFlag(values.k, 'k', 1, 1, 256);
  const limit = values.limit === undefined ? undefined : integerFlag(values.limit, 'limit', 0, 1, 10_000_000);
  const concurrency = integerFlag(values.concurrency, 'concurrency', 8, 1, 10_000);
  const temperature = values.temperature === undefined ? 0 : Number(values.temperature);
  if (!Number.isFinite(temperature) || temperature < 0 || temperature > 5)
    throw new UsageError(`--temperature expects a number between 0 and 5, got "${values.temperature}"`);
  const trajectory: TrajectorySettings = {
    limits: {
      maxTurns: integerFlag(values['max-turns'], 'max-turns', 10, 1, 100_000),
      maxNewTokensPerTurn: integerFlag(values['max-new-tokens'], 'max-new-tokens', 256, 1, 65_536),
    },
    options: {
      temperature,
      maxObservationChars: integerFlag(values['max-observation-chars'], 'max-observation-chars', 2000, 100, 1_000_000),
    },
  };
  const seed = integerFlag(values.seed, 'seed', 0, 0, 2 ** 31 - 1);
  const set = await resolveDataset(values.dataset, {
    ...(values.layout !== undefined ? { layout: values.layout } : {}),
    ...(values.strict ? { strict: true } : {}),
    ...(limit !== undefined ? { limit } : {}),
  });
  if (set.items.length === 0) throw new UsageError(`--dataset: ${set.path} has no usable question (${set.skipped.length} rows skipped)`);
  for (const skipped of set.skipped.slice(0, 5))
    console.error(`  skipped ${set.path}:${skipped.line}: ${skipped.field}: ${skipped.reason}`);
  if (set.skipped.length > 5) console.error(`  … ${set.skipped.length - 5} more rows skipped (--strict refuses the set instead)`);
  const text = set.items.map((item) => JSON.stringify(toQuestionRow(item))).join('\n') + '\n';
  const datasetVersion = createHash('sha256').update(text).digest('hex');
  return {
    set,
    text,
    fields: {
      datasetKey: evaluationKeys.dataset(datasetVersion),
      dataset: set.name,
      datasetVersion,
      questions: set.items.length,
      k,
      concurrency,
      trajectory,
      judge: values.judge === true,
      seed,
      ...(values['run-id'] ? { runId: values['run-id'] } : {}),
    },
  };
}

/** `--dataset NAME|FILE`: a file, or a set under the data root named by its path there, with or without the extension, or its file name alone. */
export async function resolveDataset(value: string, options: { layout?: string; strict?: boolean; limit?: number }): Promise<QuestionSet> {
  const read = (file: string) =>
    loadQuestionSet(file, options).catch((error: unknown) => {
      throw new UsageError(
        `--${options.layout !== undefined && /layout/i.test(String(error)) ? 'layout' : 'dataset'}: ${(error as Error).message}`,
      );
    });
  if (fs.existsSync(value)) return read(value);
  let sets: Awaited<ReturnType<typeof listEvaluationSets>> = [];
  try {
    sets = await listEvaluationSets();
  } catch (error) {
    throw new UsageError(`--dataset: "${value}" is no file, and no data root to look it up in (${(error as Error).message})`);
  }
  const bare = (name: string) => name.replace(/\.jsonl?$/i, '');
  const matches = sets.filter((set) => set.set === value || bare(set.set) === value || bare(set.set.split('/').pop()!) === value);
  if (matches.length === 1) return read(matches[0]!.path);
  if (matches.length > 1)
    throw new UsageError(
      `--dataset: "${value}" names ${matches.length} sets (${matches.map((set) => bare(set.set)).join(', ')}); give one of these`,
    );
  const names = sets.map((set) => bare(set.set));
  throw new UsageError(
    `--dataset: "${value}" is no file and no set under the data root; sets: ${names.slice(0, 12).join(', ')}${names.length > 12 ? ', …' : ''} (longhaul datasets list)`,
  );
}

/** The contract line of `--json` (issue 11): snake_case, `f1` being the bag-of-tokens F1 (SQuAD, FlashRAG). */
export function contractLine(outcome: EvaluationOutcome): Record<string, unknown> {
  const withF1 = <T>(values: Readonly<Record<string, T>>) => ({
    ...values,
    ...(values.f1_flashrag !== undefined ? { f1: values.f1_flashrag } : {}),
  });
  return {
    result_id: outcome.resultId,
    dataset: outcome.dataset,
    questions: outcome.questions,
    k: outcome.k,
    policy_version: outcome.policyVersion,
    avg_at_k: withF1(outcome.avgAtK),
    avg_at_k_ci95: withF1(outcome.avgAtKCi95),
    pass_at_k: withF1(outcome.passAtK),
    mean_turns: outcome.meanTurns,
    mean_tool_calls: outcome.meanToolCalls,
    stop_reasons: outcome.stopReasons,
    seconds: outcome.seconds,
  };
}

export const evalCommand: Command = {
  name: 'eval',
  summary: 'evaluate a policy version on a question set: k samples per question, Avg@k with a 95 % interval, Pass@k',
  usage: `longhaul eval --dataset NAME|FILE [--version V] [-k K] [--limit N] [--concurrency C] [--layout L] [--strict]
              [--judge] [--temperature T] [--seed S] [--max-turns N] [--max-new-tokens N] [--max-observation-chars N]
              [--run-id ID] [--result-id ID] [--json]
longhaul eval --reproduce RESULT-ID [--json]
longhaul eval compare BEFORE-ID AFTER-ID [--seed S] [--json]

Runs the evaluation workflow: k trajectories per question (at most C at once), each question scored
as soon as its samples finish (exact match, F1 over token sets as ASearcher computes it, F1 over bags
of tokens as SQuAD and FlashRAG do, cover-EM, and with --judge the LLM judge's verdict and rationale).
It reports Avg@k (mean over questions of the mean over samples; never best-of-k) with a seeded 95 %
bootstrap interval over questions, Pass@k (a question counts when one sample scores 1), turns, tool
calls and stop reasons. The result is kept as the blob evaluations/<id>/result.json and a row of
evaluation_results, with its frozen environment: dataset hash, corpus version, prompt template hash,
tool settings, sampling and seed, policy version, judge, git commit. Tool observations are frozen
per evaluation, so --reproduce runs the same questions with the same settings and sees the very
observations the original saw; with greedy sampling (the default) the answers match it exactly.

  --dataset NAME|FILE  a question-set file in any known layout (longhaul datasets inspect FILE), or a
                       set under the data root by name, e.g. bamboogle or r1searcher_eval_set/bamboogle
  --version V          policy version to evaluate (default: the latest registered). The gpu-infer worker
                       serves one version: for another than the latest it is restarted on V and back on
                       the latest afterwards (also on Ctrl-C); refused while a run trains on this stack
  -k K                 samples per question (default 1)      --limit N   the first N questions
  --concurrency C      trajectories at once (default 8)      --seed S    base seed (default 0)
  --temperature T      sampling temperature (default 0: greedy)
  --max-turns N        turns per trajectory (default 10)   --max-new-tokens N   per turn (default 256)
  --max-observation-chars N  characters of a tool result the agent sees (default 2000; the demo uses
                       600: evaluate a demo's policy with its settings to compare with its stages)
  --judge              grade with the LLM judge too (LONGHAUL_JUDGE_BASE_URL); a judge that is down is
                       retried until it answers, never scored 0
  --reproduce ID       run result ID again in its frozen environment (other flags but --json are refused)
  --json               end stdout with one JSON line: result_id, dataset, questions, k, policy_version,
                       avg_at_k, avg_at_k_ci95, pass_at_k (metrics em, f1, f1_asearcher, f1_flashrag, cover_em, judge)

compare: two stored results question by question (e.g. a policy before and after training, on the
same set): per metric the Avg@k of each over the questions both scored, the paired difference
after − before with its 95 % bootstrap interval over questions (seed --seed, default 0), and how many
questions rose, fell or stayed. Pairing removes the spread between questions, so the paired interval
is much narrower than the two Avg@k intervals side by side. Questions are paired by id and must ask
the same thing; those on one side only are counted and left out. --json: one JSON line.

Bad input (an unknown dataset or layout, k < 1, a bad limit, a version that does not exist, a result
id that is not stored) exits 2 naming the flag before anything runs.`,
  async run(args) {
    if (args[0] === 'compare') return compareResults(args.slice(1));
    const { values } = parseFlags(args, {
      ...evaluationFlagOptions,
      version: { type: 'string' },
      'result-id': { type: 'string' },
      reproduce: { type: 'string' },
      json: { type: 'boolean' },
    });
    const resultId = values['result-id'] ?? `eval-${new Date().toISOString().replace(/[:.]/g, '-').toLowerCase()}`;
    if (values.reproduce !== undefined) {
      const others = Object.keys(values).filter((flag) => !['reproduce', 'json', 'result-id'].includes(flag));
      if (others.length > 0) throw new UsageError(`--reproduce runs the original's settings; leave out --${others.join(', --')}`);
      return runEvaluation({ reproduce: values.reproduce, resultId, json: values.json === true });
    }
    const version = values.version === undefined ? undefined : integerFlag(values.version, 'version', 0, 0, 1_000_000_000);
    const request = await evaluationRequest(values);
    const input: EvaluationInput = {
      resultId,
      ...request.fields,
      policyVersion: version ?? 0,
      ...((commit) => (commit ? { commit } : {}))(repositoryCommit()),
    };
    preflight(() => parseEvaluationInput(input), evaluationFlags);
    return runEvaluation({ input, text: request.text, version, json: values.json === true });
  },
};

type EvaluationRequest =
  | { readonly input: EvaluationInput; readonly text: string; readonly version: number | undefined; readonly json: boolean }
  | { readonly reproduce: string; readonly resultId: string; readonly json: boolean };

/** The input that runs `original` again: its questions, settings, seed, version and frozen observations. */
export function reproductionInput(original: EvaluationResult, resultId: string): EvaluationInput {
  const { summary, environment } = original;
  const tools = (environment.tools ?? {}) as { trajectory?: TrajectorySettings; concurrency?: number; judge?: boolean };
  return {
    resultId,
    datasetKey: evaluationKeys.dataset(summary.datasetVersion),
    dataset: summary.dataset,
    datasetVersion: summary.datasetVersion,
    questions: summary.questions,
    k: summary.k,
    concurrency: tools.concurrency ?? 8,
    policyVersion: summary.policyVersion,
    trajectory: tools.trajectory ?? {},
    judge: environment.judge !== undefined,
    seed: environment.sampling.seed,
    ...(summary.runId ? { runId: summary.runId } : {}),
    reproduces: summary.reproduces ?? summary.resultId,
    corpusVersion: environment.corpusVersion,
    ...(environment.commit ? { commit: environment.commit } : {}),
  };
}

async function runEvaluation(request: EvaluationRequest): Promise<number> {
  const settings = config();
  await stackUp(settings, { workers: true });
  const services = openServices(settings);
  try {
    let input: EvaluationInput;
    const latest = await services.versions.latest();
    if ('reproduce' in request) {
      const original = await readEvaluationResult(services, request.reproduce, '--reproduce');
      input = reproductionInput(original, request.resultId);
      console.error(
        `reproducing ${request.reproduce} as ${request.resultId} (corpus ${input.corpusVersion}, policy v${input.policyVersion})`,
      );
    } else {
      if (request.version === undefined) {
        if (!latest) throw new UsageError('--version: no policy version is registered yet; run `longhaul model prepare` first');
      } else if (!(await services.versions.get(request.version))) {
        throw new UsageError(
          `--version: policy version ${request.version} is not registered (${latest ? `the latest is ${latest.version}` : 'none is; run `longhaul model prepare`'})`,
        );
      }
      input = { ...request.input, policyVersion: request.version ?? latest!.version };
      await services.blobs.put(input.datasetKey, request.text, 'application/x-ndjson');
    }
    const client = await services.client();
    const restore = await serveForEvaluation(client, input.policyVersion, latest?.version ?? input.policyVersion, (line) =>
      console.error(line),
    );
    try {
      return await followEvaluation(services, client, settings, input, request.json);
    } finally {
      await restore?.();
    }
  } finally {
    await services.close();
  }
}

/** Start the evaluation workflow, follow it with a progress bar, print its summary; 1 when another version made its samples. */
async function followEvaluation(
  services: Services,
  client: Client,
  settings: Config,
  input: EvaluationInput,
  json: boolean,
): Promise<number> {
  const workflowId = `evaluation-${input.resultId}`;
  const handle = await client.workflow.start(evaluationWorkflowType, {
    taskQueue: taskQueueName('agent', settings.taskQueuePrefix),
    workflowId,
    staticSummary: `evaluation ${input.resultId}: ${input.dataset}, ${input.questions} questions × ${input.k ?? 1}, v${input.policyVersion}`,
    args: [input],
  });
  if (settings.temporal.embedded)
    console.error(
      `evaluation ${workflowId} · Web UI http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows/${workflowId}`,
    );
  const bar = progressBar('questions', input.questions);
  const startedAt = Date.now();
  const outcome = await followWorkflow<EvaluationOutcome, EvaluationState>(handle, {
    query: evaluationStateQuery,
    onState: (state) => {
      const hours = (Date.now() - startedAt) / 3_600_000;
      bar.update(state.done, `${state.inflight} trajectories running · ${hours > 0 ? (state.done / hours).toFixed(0) : 0} questions/h`);
    },
  });
  bar.finish(`${outcome.seconds.toFixed(0)} s`);
  console.log(
    `${outcome.dataset}: ${outcome.questions} questions × ${outcome.k} samples, policy v${outcome.policyVersion} (${outcome.resultId})`,
  );
  for (const [metric, value] of Object.entries(outcome.avgAtK)) {
    const [low, high] = outcome.avgAtKCi95[metric] ?? [value, value];
    console.log(
      `  ${metric.padEnd(13)} Avg@${outcome.k} ${(value * 100).toFixed(1)} [${(low * 100).toFixed(1)}, ${(high * 100).toFixed(1)}]  Pass@${outcome.k} ${((outcome.passAtK[metric] ?? 0) * 100).toFixed(1)}`,
    );
  }
  const stops = Object.entries(outcome.stopReasons)
    .map(([reason, count]) => `${reason} ${count}`)
    .join(', ');
  console.log(`  turns ${outcome.meanTurns.toFixed(2)} · tool calls ${outcome.meanToolCalls.toFixed(2)} per sample · stops: ${stops}`);
  console.log(`  result: ${outcome.resultKey}`);
  // The gpu-infer worker serves one version: another version asked for was switched to above, but a worker
  // started on another (LONGHAUL_POLICY_VERSION) still serves it; the stored result says which versions made its tokens.
  const stored = JSON.parse((await services.blobs.get(outcome.resultKey)).toString()) as { versionsUsed?: number[] };
  const versionsUsed = stored.versionsUsed ?? [];
  const foreign = versionsUsed.filter((used) => used !== outcome.policyVersion);
  if (foreign.length > 0)
    console.error(
      `warning: the samples were generated by policy version ${versionsUsed.map((used) => `v${used}`).join(', ')}, not only v${outcome.policyVersion}: ` +
        `the gpu-infer worker serves the version it started with. Restart it on v${outcome.policyVersion} ` +
        `(stop worker-gpu-infer, then LONGHAUL_POLICY_VERSION=${outcome.policyVersion} longhaul up) and evaluate again; this result is kept, with its versions.`,
    );
  if (json) console.log(JSON.stringify({ ...contractLine(outcome), versions_used: versionsUsed }));
  return foreign.length > 0 ? 1 : 0;
}

/** `longhaul eval compare BEFORE AFTER`: two stored results paired by question (activities/evaluation/compare.ts). */
async function compareResults(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, { seed: { type: 'string' }, json: { type: 'boolean' } }, true);
  if (positionals.length !== 2)
    throw new UsageError(
      `compare needs two result ids, BEFORE and AFTER (got ${positionals.length}); each \`longhaul eval\` prints its id ("result: evaluations/<id>/result.json")`,
    );
  const seed = integerFlag(values.seed, 'seed', 0, 0, 2 ** 31 - 1);
  const settings = config();
  await stackUp(settings, { workers: false });
  const services = openServices(settings);
  try {
    const [before, after] = await Promise.all(
      positionals.map((id, index) => readEvaluationResult(services, id, `compare: ${index === 0 ? 'BEFORE' : 'AFTER'}`)),
    );
    const comparison = compareEvaluations(before!, after!, seed);
    if (comparison.paired === 0)
      throw new UsageError(
        `compare: ${comparison.before.resultId} (${comparison.before.dataset}) and ${comparison.after.resultId} (${comparison.after.dataset}) share no question id with the same text: evaluate both on the same --dataset`,
      );
    const describe = (side: EvaluationComparison['before']) =>
      `${side.resultId} (v${side.policyVersion}, k=${side.k}, T=${side.temperature})`;
    console.log(`${describe(comparison.before)} → ${describe(comparison.after)}: ${comparison.paired} questions paired`);
    const left = [
      comparison.beforeOnly ? `${comparison.beforeOnly} only in BEFORE` : '',
      comparison.afterOnly ? `${comparison.afterOnly} only in AFTER` : '',
      comparison.mismatched.length
        ? `${comparison.mismatched.length} with the same id but another question (${comparison.mismatched.slice(0, 3).join(', ')})`
        : '',
    ].filter(Boolean);
    if (left.length) console.log(`  left out: ${left.join('; ')}`);
    const { k: k1, temperature: t1 } = comparison.before;
    const { k: k2, temperature: t2 } = comparison.after;
    if (k1 !== k2 || t1 !== t2) console.log(`  note: the two were sampled differently (k ${k1} vs ${k2}, temperature ${t1} vs ${t2})`);
    const points = (value: number) => (value * 100).toFixed(1);
    const signed = (value: number) => `${value >= 0 ? '+' : ''}${points(value)}`;
    console.log(
      `  ${'metric'.padEnd(13)} ${'before'.padStart(7)} ${'after'.padStart(7)}  ${'after − before [95 % CI]'.padEnd(26)} rose / fell / same`,
    );
    for (const [metric, row] of Object.entries(comparison.metrics))
      console.log(
        `  ${metric.padEnd(13)} ${points(row.before).padStart(7)} ${points(row.after).padStart(7)}  ${`${signed(row.difference)} [${signed(row.ci95[0])}, ${signed(row.ci95[1])}]`.padEnd(26)} ${row.improved} / ${row.worsened} / ${row.unchanged}`,
      );
    if (values.json)
      console.log(
        JSON.stringify({
          before: comparison.before.resultId,
          after: comparison.after.resultId,
          before_version: comparison.before.policyVersion,
          after_version: comparison.after.policyVersion,
          paired: comparison.paired,
          before_only: comparison.beforeOnly,
          after_only: comparison.afterOnly,
          mismatched: comparison.mismatched,
          metrics: comparison.metrics,
        }),
      );
    return 0;
  } finally {
    await services.close();
  }
}

/** A stored evaluation result by id (its row names the blob); an unknown id is a usage error naming `what` asked for it. */
export async function readEvaluationResult(
  services: Pick<ReturnType<typeof openServices>, 'pool' | 'blobs'>,
  resultId: string,
  what: string,
): Promise<EvaluationResult> {
  const row = await createPgEvaluationStore(services.pool).get(resultId);
  if (!row)
    throw new UsageError(
      `${what}: no evaluation result "${resultId}" (see the evaluation_results table, or the id \`longhaul eval\` printed)`,
    );
  return evaluationResultSchema.parse(JSON.parse((await services.blobs.get(row.resultKey)).toString('utf8')));
}
