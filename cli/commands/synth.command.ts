/**
 * `longhaul synth`: the data-synthesis agent (issue 10). Starts a synthesisRun workflow (one
 * synthesizeQuestion child per candidate), shows its progress, prints the dataset's statistics beside
 * ASearcher's published figures, and with --json ends stdout with one JSON line. `synth audit`
 * writes a readable sample of a published dataset for a human audit; `synth list` shows datasets.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openServices } from '../../composition/services.js';
import { config, type Config } from '../../infra/config.js';
import { stackUp } from '../../infra/services/stack.js';
import { createPgSynthesisStore } from '../../infra/postgres/synthesis-store.pg.js';
import { migrate } from '../../infra/postgres/migrate.js';
import { createSynthesisActivities, datasetBlobKey } from '../../activities/synthesis/synthesis.activities.js';
import { toASearcherJsonl } from '../../activities/question-sets/asearcher.js';
import { parseQuestionSet } from '../../activities/question-sets/question-set.js';
import { synthesisDependencies } from '../../composition/queue-activities.js';
import { parseSynthesisSettings } from '../../workflows/contracts/synthesis.input.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import {
  synthesisRunStateQuery,
  synthesisRunWorkflowType,
  type SynthesisFact,
  type SynthesisRunResult,
  type SynthesisRunState,
} from '../../workflows/contracts/synthesis.contract.js';
import { parseSynthesisRunInput } from '../../workflows/contracts/synthesis.input.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { followWorkflow } from '../follow-workflow.js';
import { preflight } from '../preflight.js';
import { progressBar } from '../progress.js';

/** The flag behind each synthesisRun input field, for preflight refusals. */
const synthFlags = {
  datasetId: 'dataset-id',
  count: 'count',
  seed: 'seed',
  synthesizer: 'synthesizer',
  concurrency: 'concurrency',
  'settings.targetHops': 'hops',
  'settings.targetFuzzes': 'fuzzes',
  'settings.difficultySamples': 'samples',
  'settings.difficultyThreshold': 'threshold',
  'settings.solverAttempts': 'solver-attempts',
  'settings.solverMode': 'solver',
  'settings.llmBaseUrl': 'llm-url',
  'settings.llmModel': 'llm-model',
  'settings.llmAttempts': 'llm-attempts',
  'settings.alternativeAnswers': 'alternatives',
  'settings.evidenceCheck': 'evidence-check',
  'settings.evidenceDistractors': 'evidence-distractors',
};

type Services = ReturnType<typeof openServices>;

/**
 * The setup every subcommand shares: the configuration, the stack (with the workers when a workflow
 * runs), the services, the migrations when no worker brings them; closed whatever `body` does.
 */
async function withStack(options: { workers: boolean }, body: (services: Services, settings: Config) => Promise<number>): Promise<number> {
  const settings = config();
  await stackUp(settings, { workers: options.workers });
  const services = openServices(settings);
  try {
    if (!options.workers) await migrate(settings.postgres.url);
    return await body(services, settings);
  } finally {
    await services.close();
  }
}

/** ASearcher's published figures (REFERENCE.md), printed beside ours. */
const ASEARCHER = { seeds: 14_107, candidates: 134_000, kept: 25_624, injections: 4.27, fuzzes: 2.1 };

/** A flag's text as a number for the workflow's own parser to judge (it names the flag when it refuses). */
const numeric = (value: string | undefined): number | string | undefined =>
  value === undefined ? undefined : value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;

/** The `--json` line: the contract keys first, then the rest of the statistics. */
export function synthJson(result: SynthesisRunResult): Record<string, unknown> {
  return {
    dataset: result.datasetId,
    candidates: result.candidates,
    accepted: result.accepted,
    injections_per_question: result.injectionsPerQuestion,
    fuzzes_per_question: result.fuzzesPerQuestion,
    median_solver_tool_calls: result.medianSolverToolCalls,
    rejections_by_reason: result.rejectionsByReason,
    hops_per_question: result.hopsPerQuestion,
    hops_distribution: result.hopsDistribution,
    yield_per_stage: result.yieldPerStage,
    share_solver_tool_calls_at_least_20: result.shareSolverToolCallsAtLeast20,
    solver_pass_rate: result.solverPassRate,
    difficulty_distribution: result.difficultyDistribution,
    seconds_per_accepted: result.secondsPerAccepted,
    tokens_per_accepted: result.tokensPerAccepted,
    seconds_per_candidate: result.secondsPerCandidate,
    tokens_per_candidate: result.tokensPerCandidate,
    llm_calls: result.llm?.calls ?? 0,
    llm_prompt_tokens: result.llm?.promptTokens ?? 0,
    llm_completion_tokens: result.llm?.completionTokens ?? 0,
    llm_tokens_per_candidate: result.llm?.tokensPerCandidate ?? 0,
    evidence_only: {
      checked: result.evidenceOnly?.checked ?? 0,
      passed: result.evidenceOnly?.passed ?? 0,
      pass_rate: result.evidenceOnly?.passRate ?? 0,
      failed_where_solver_passed: result.evidenceOnly?.failedWhereSolverPassed ?? 0,
    },
    wall_seconds: result.wallSeconds,
    blob_key: result.blobKey,
    content_hash: result.contentHash,
  };
}

function printStatistics(result: SynthesisRunResult): void {
  const stages = Object.entries(result.yieldPerStage)
    .map(([stage, count]) => `${stage} ${count}`)
    .join(' → ');
  console.log(
    `dataset ${result.datasetId}: ${result.accepted} of ${result.candidates} candidates accepted (${result.wallSeconds.toFixed(0)} s)`,
  );
  console.log(`  yield per stage: ${stages}`);
  for (const [reason, count] of Object.entries(result.rejectionsByReason).sort((a, b) => b[1] - a[1]))
    console.log(`  rejected ${String(count).padStart(5)} × ${reason}`);
  console.log(
    `  per accepted question: ${result.injectionsPerQuestion} injections (ASearcher ${ASEARCHER.injections}), ${result.fuzzesPerQuestion} fuzzes (ASearcher ${ASEARCHER.fuzzes}), ${result.hopsPerQuestion} hops`,
  );
  console.log(
    `  reference solver: median ${result.medianSolverToolCalls} tool calls, ${(100 * result.shareSolverToolCallsAtLeast20).toFixed(0)} % with ≥ 20, pass rate ${result.solverPassRate}`,
  );
  const evidence = result.evidenceOnly;
  if (evidence && evidence.checked > 0)
    console.log(
      `  evidence only (gold + distractor passages, no tools): ${evidence.passed} of ${evidence.checked} answered (pass rate ${evidence.passRate}; ${evidence.failedWhereSolverPassed} not answered that the tool-using solver solved)`,
    );
  console.log(`  closed-book error lower bounds (accepted): ${JSON.stringify(result.difficultyDistribution)}`);
  console.log(
    `  cost: ${result.secondsPerAccepted} task-seconds and ${result.tokensPerAccepted} tokens per accepted item · ASearcher kept ${ASEARCHER.kept} of ${ASEARCHER.candidates} candidates from ${ASEARCHER.seeds} seeds`,
  );
  console.log(
    `  per candidate: ${result.secondsPerCandidate} task-seconds, ${result.tokensPerCandidate} tokens` +
      (result.llm && result.llm.calls > 0
        ? ` · chat model: ${result.llm.calls} calls, ${result.llm.promptTokens} prompt + ${result.llm.completionTokens} completion tokens (${result.llm.tokensPerCandidate} per candidate)`
        : ''),
  );
  console.log(`  published ${result.blobKey} (sha256 ${result.contentHash.slice(0, 16)}…)`);
}

async function runSynthesis(args: string[]): Promise<number> {
  const { values } = parseFlags(args, {
    synthesizer: { type: 'string' },
    count: { type: 'string' },
    seed: { type: 'string' },
    hops: { type: 'string' },
    fuzzes: { type: 'string' },
    samples: { type: 'string' },
    threshold: { type: 'string' },
    'solver-attempts': { type: 'string' },
    solver: { type: 'string' },
    'llm-url': { type: 'string' },
    'llm-model': { type: 'string' },
    'llm-attempts': { type: 'string' },
    alternatives: { type: 'string' },
    'evidence-check': { type: 'string' },
    'evidence-distractors': { type: 'string' },
    concurrency: { type: 'string' },
    'dataset-id': { type: 'string' },
    json: { type: 'boolean' },
  });
  const settings = Object.fromEntries(
    Object.entries({
      targetHops: numeric(values.hops),
      targetFuzzes: numeric(values.fuzzes),
      difficultySamples: numeric(values.samples),
      difficultyThreshold: numeric(values.threshold),
      solverAttempts: numeric(values['solver-attempts']),
      solverMode: values.solver,
      llmBaseUrl: values['llm-url'],
      llmModel: values['llm-model'],
      llmAttempts: numeric(values['llm-attempts']),
      alternativeAnswers: numeric(values.alternatives),
      evidenceCheck: values['evidence-check'],
      evidenceDistractors: numeric(values['evidence-distractors']),
    }).filter(([, value]) => value !== undefined),
  );
  const raw = {
    datasetId: values['dataset-id'] ?? `synth-${new Date().toISOString().replace(/[:.]/g, '-')}`,
    count: numeric(values.count) ?? 100,
    seed: numeric(values.seed) ?? 0,
    synthesizer: values.synthesizer ?? 'grounded',
    concurrency: numeric(values.concurrency) ?? 4,
    settings,
  };
  const input = preflight(() => parseSynthesisRunInput(raw), synthFlags);
  const llmOnly = (['llm-url', 'llm-model', 'llm-attempts', 'alternatives'] as const).filter((flag) => values[flag] !== undefined);
  if (input.synthesizer !== 'llm' && llmOnly.length > 0)
    throw new UsageError(`--${llmOnly[0]} applies to --synthesizer llm only (this run's synthesizer is ${input.synthesizer})`);
  if (input.synthesizer === 'llm' && input.settings.llmBaseUrl === undefined && config().synthesisLlm.baseUrl === null)
    throw new UsageError(
      '--llm-url: --synthesizer llm needs a chat endpoint: pass --llm-url http://HOST:PORT/v1 or set LONGHAUL_SYNTH_LLM_BASE_URL',
    );
  return withStack({ workers: true }, async (services, settingsOfRun) => {
    const client = await services.client();
    const workflowId = `synthesis-${input.datasetId}`;
    const handle = await client.workflow.start(synthesisRunWorkflowType, {
      taskQueue: taskQueueName('agent', settingsOfRun.taskQueuePrefix),
      workflowId,
      staticSummary: `synthesis ${input.datasetId} (${input.synthesizer}, ${input.count} candidates)`,
      args: [raw],
    });
    if (settingsOfRun.temporal.embedded)
      console.error(
        `synthesis ${workflowId} · Web UI http://127.0.0.1:${settingsOfRun.temporal.uiPort}/namespaces/${settingsOfRun.temporal.namespace}/workflows/${workflowId}`,
      );
    const bar = progressBar('synthesis candidates', input.count);
    const result = await followWorkflow<SynthesisRunResult, SynthesisRunState>(handle, {
      query: synthesisRunStateQuery,
      onState: (state) =>
        bar.update(state.finished, `${state.accepted} accepted · ${state.started - state.finished} in flight · ${state.phase}`),
    });
    bar.finish(`${result.accepted}/${result.candidates} accepted`);
    printStatistics(result);
    if (values.json) console.log(JSON.stringify(synthJson(result)));
    return 0;
  });
}

interface DatasetLine {
  id: string;
  source?: string;
  question: string;
  answers: string[];
  goldTurns: string[];
  provenance: {
    workflowId: string;
    hops: number;
    injections: number;
    fuzzes: number;
    facts: SynthesisFact[];
    verdicts: { check: string; passed: boolean; reason: string }[];
    chain: { actions: { action: string; ok: boolean; detail: string }[] };
  };
}

/** A readable audit file: each sampled item's question, answer, evidence spans, verdicts and actions. */
export function auditText(datasetId: string, lines: readonly DatasetLine[], sample: number, seed: number): string {
  // A deterministic sample: items ordered by a hash of (seed, id).
  const score = (id: string) => {
    let hash = 2166136261 ^ seed;
    for (const character of id) hash = Math.imul(hash ^ character.charCodeAt(0), 16777619);
    return hash >>> 0;
  };
  const chosen = [...lines].sort((a, b) => score(a.id) - score(b.id)).slice(0, sample);
  const out = [`# Audit sample of dataset ${datasetId}`, '', `${chosen.length} of ${lines.length} accepted items (seed ${seed}).`, ''];
  out.push('For each item: is the answer right, is it the only answer, does each span state its fact? Mark ✔ or ✘.', '');
  chosen.forEach((line, index) => {
    out.push(`## ${index + 1}. ${line.id}`, '', `**Question.** ${line.question}`, '', `**Answer.** ${line.answers.join(' | ')}`, '');
    out.push(
      `Hops ${line.provenance.hops} · injections ${line.provenance.injections} · fuzzes ${line.provenance.fuzzes} · workflow ${line.provenance.workflowId}`,
      '',
    );
    out.push('**Evidence.**', '');
    for (const fact of line.provenance.facts)
      out.push(
        `- ${fact.subjectName} · ${fact.predicate} · ${fact.objectText} — document \`${fact.evidence.documentId}\` [${fact.evidence.start}, ${fact.evidence.end}): “${fact.evidence.text}”`,
      );
    out.push('', '**Verdicts.**', '');
    for (const verdict of line.provenance.verdicts) out.push(`- ${verdict.passed ? '✔' : '✘'} ${verdict.check}: ${verdict.reason}`);
    out.push('', '**Actions.**', '');
    for (const action of line.provenance.chain.actions) out.push(`- ${action.ok ? '' : '(failed) '}${action.action}: ${action.detail}`);
    out.push('', '**Gold path.**', '', '```', ...line.goldTurns, '```', '', 'Auditor: answer right ☐  unique ☐  spans state facts ☐', '');
  });
  return out.join('\n');
}

async function audit(args: string[]): Promise<number> {
  const { values } = parseFlags(args, {
    dataset: { type: 'string' },
    sample: { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string' },
  });
  const datasetId = values.dataset;
  if (!datasetId) throw new UsageError('--dataset ID is required (see longhaul synth list)');
  const sample = integerFlag(values.sample, 'sample', 20, 1, 100_000);
  const seed = integerFlag(values.seed, 'seed', 0, 0, 2 ** 31 - 1);
  return withStack({ workers: false }, async (services, settings) => {
    const lines = await publishedLines(services, datasetId);
    const out = values.out ?? path.join(settings.home, 'reports', `synth-audit-${datasetId}.md`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, auditText(datasetId, lines, sample, seed));
    console.log(`wrote ${Math.min(sample, lines.length)} items to ${out}`);
    return 0;
  });
}

/** The published JSONL of a dataset, or a UsageError naming --dataset. */
async function publishedLines(services: Services, datasetId: string): Promise<DatasetLine[]> {
  const dataset = await createPgSynthesisStore(services.pool).dataset(datasetId);
  if (!dataset) throw new UsageError(`--dataset: no dataset "${datasetId}" (see longhaul synth list)`);
  if (dataset.status !== 'published') throw new UsageError(`--dataset: "${datasetId}" is still running; use it once it is published`);
  const text = (await services.blobs.get(dataset.blobKey ?? datasetBlobKey(datasetId))).toString('utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as DatasetLine);
}

/** `synth export`: a published dataset as ASearcher JSONL ({question, answer, source, id, aug_answer}). */
async function exportDataset(args: string[]): Promise<number> {
  const { values } = parseFlags(args, { dataset: { type: 'string' }, out: { type: 'string' } });
  const { dataset: datasetId, out } = values;
  if (!datasetId) throw new UsageError('--dataset ID is required (see longhaul synth list)');
  if (!out) throw new UsageError('--out FILE is required (the ASearcher JSONL to write)');
  return withStack({ workers: false }, async (services) => {
    const lines = await publishedLines(services, datasetId);
    const items = lines.map((line) => ({
      id: line.id,
      question: line.question,
      answers: line.answers,
      source: line.source ?? `longhaul:${datasetId}`,
    }));
    fs.writeFileSync(out, toASearcherJsonl(items));
    console.log(`wrote ${items.length} items to ${out} (ASearcher JSONL)`);
    return 0;
  });
}

/**
 * `synth import`: an ASearcher JSONL file as a published dataset (synthesizer "imported"), so it can be
 * audited, exported and trained on like a synthesized one; its items were not checked here, and say so.
 * Bad rows are reported by line and skipped.
 */
async function importDataset(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, { 'dataset-id': { type: 'string' } }, true);
  const file = positionals[0];
  if (!file || positionals.length > 1)
    throw new UsageError('expected one FILE (ASearcher JSONL: question, answer, source, id, aug_answer)');
  if (!fs.existsSync(file)) throw new UsageError(`FILE: "${file}" does not exist`);
  const datasetId = values['dataset-id'] ?? `import-${path.basename(file).replace(/[^A-Za-z0-9._-]+/g, '-')}`;
  if (!/^[A-Za-z0-9._-]+$/.test(datasetId))
    throw new UsageError(`--dataset-id expects letters, digits, ".", "_" or "-", got "${datasetId}"`);
  let set;
  try {
    set = parseQuestionSet(fs.readFileSync(file, 'utf8'), file, { layout: 'asearcher' });
  } catch (error) {
    throw new UsageError(`FILE: ${(error as Error).message}`);
  }
  for (const skipped of set.skipped) console.error(`${file}:${skipped.line}: skipped (${skipped.field}: ${skipped.reason})`);
  return withStack({ workers: false }, async (services) => {
    const store = createPgSynthesisStore(services.pool);
    if (await store.dataset(datasetId))
      throw new UsageError(`--dataset-id: "${datasetId}" exists already (published datasets never change); choose another`);
    await store.beginDataset({
      datasetId,
      synthesizer: 'imported',
      seed: 0,
      settings: { ...parseSynthesisSettings({}), file, sha256: set.sha256 },
    });
    for (const [taskIndex, item] of set.items.entries())
      await store.recordCandidate({
        datasetId,
        taskIndex,
        workflowId: `${datasetId}-import-${taskIndex}`,
        accepted: true,
        reason: 'imported (not checked by Longhaul)',
        question: item.question,
        answer: item.answers[0] ?? '',
        candidate: {
          importedId: item.id,
          source: item.source ?? null,
          answers: item.answers,
          goldTurns: [],
          facts: [],
          hops: 0,
          injections: 0,
          fuzzes: 0,
        },
        seconds: 0,
        tokens: 0,
      });
    const result = await createSynthesisActivities(synthesisDependencies(services.pool, services.blobs)).publishDataset({
      datasetId,
      count: set.items.length,
    });
    console.log(`imported ${set.items.length} items (${set.skipped.length} rows skipped) as dataset ${datasetId}: ${result.blobKey}`);
    return 0;
  });
}

async function list(): Promise<number> {
  return withStack({ workers: false }, async (services) => {
    for (const dataset of await createPgSynthesisStore(services.pool).list())
      console.log(
        `${dataset.datasetId}  ${dataset.status}  ${dataset.synthesizer}  seed ${dataset.seed}  ${dataset.items ?? '-'} items  ${dataset.blobKey ?? ''}`,
      );
    return 0;
  });
}

export const synthCommand: Command = {
  name: 'synth',
  summary: 'synthesize hard questions with provable answers (the data-synthesis agent), audit and list datasets',
  usage: `longhaul synth [--synthesizer grounded|llm] [--count N] [--seed N] [--hops N] [--fuzzes N] [--samples N]
               [--threshold X] [--solver gold|policy] [--solver-attempts N] [--concurrency N] [--dataset-id ID] [--json]
               [--evidence-check off|record|gate] [--evidence-distractors N]
               [--llm-url URL] [--llm-model NAME] [--llm-attempts N] [--alternatives N]   (--synthesizer llm)
longhaul synth audit --dataset ID [--sample N] [--seed N] [--out FILE]
longhaul synth export --dataset ID --out FILE      (ASearcher JSONL: question, answer, source, id, aug_answer)
longhaul synth import FILE [--dataset-id ID]       (ASearcher JSONL → a published dataset, marked unchecked)
longhaul synth list

Runs N candidates (default 100) through the synthesizer's actions (seed → inject → fuzz → verify →
exit) and the checks: quality, grounding (every evidence span re-verified), uniqueness (every
knowledge-base entity satisfying all constraints enumerated: exactly one answer), contamination
(evaluation sets under LONGHAUL_DATA_ROOT), solvability (a reference solver follows the gold path
through the real search and access tools) and difficulty (N closed-book samples of the configured
policy; kept when the Wilson 95 % lower bound of the error rate is above --threshold). Accepted items
are published as an immutable dataset (JSONL with goldTurns, usable by train and warm-start).
Needs the knowledge base of \`longhaul corpus build\`. Same --seed, same knowledge base: same dataset.

  --synthesizer NAME  grounded (default; no LLM) or llm (each action a prompt to an OpenAI-compatible chat
                      model, facts grounded mechanically in stored passages; see docs/SYNTHESIS.md)
  --llm-url URL       the llm synthesizer's endpoint, ending in /v1 (default LONGHAUL_SYNTH_LLM_BASE_URL;
                      its key: LONGHAUL_SYNTH_LLM_API_KEY)   --llm-model NAME (default LONGHAUL_SYNTH_LLM_MODEL)
  --llm-attempts N    prompts per action before unusable replies reject it (default 2)
  --alternatives N    distinct wrong answers the llm path's uniqueness check must weigh (default 20)
  --solver MODE       gold: replay the gold path through the real tools (default); policy: the reference
                      policy searches on its own, pass@k over --solver-attempts k
  --evidence-check M  the evidence-only check (the policy answers from the gold passages plus distractor
                      passages, no tools): record (default with --synthesizer llm) stores its verdict beside
                      the solver's, gate also rejects on failure, off (default with grounded) skips it
  --evidence-distractors N  distractor passages from searching the question (default 4)
  --count N           candidates to run (default 100)     --seed N   random seed (default 0)
  --hops N            chain length to aim for (default 3)   --fuzzes N  obscured literals (default 2)
  --samples N         closed-book samples (default 16)   --threshold X  in [0, 1] (default 0.7)
  --concurrency N     candidates in flight (default 4)   --json  end with one JSON line of statistics
  audit               writes a Markdown file (default <home>/reports/synth-audit-ID.md) of --sample N items`,
  async run(args) {
    if (args[0] === 'audit') return audit(args.slice(1));
    if (args[0] === 'export') return exportDataset(args.slice(1));
    if (args[0] === 'import') return importDataset(args.slice(1));
    if (args[0] === 'list') return list();
    return runSynthesis(args);
  },
};
