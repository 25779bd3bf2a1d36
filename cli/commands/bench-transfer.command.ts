import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { capitalQuestions } from '../../corpus/demo-questions.js';
import { parseQuestions } from '../../activities/learner.activities.js';
import { toQuestionRow } from '../../activities/question-sets/question-set.js';
import { createPgBenchmarkResultStore } from '../../infra/postgres/benchmark-result-store.pg.js';
import { stackUp } from '../../infra/services/stack.js';
import { parseSftHyperparameters } from '../../gpu/train/train-step.schema.js';
import {
  evaluationInputFor,
  formatTransfer,
  learnerInputFor,
  runTransferBenchmark,
  transferModeNames,
  transferModes,
  transferStages,
  warmStartInputFor,
  type TransferOptions,
  type TransferStage,
} from '../../bench/transfer-benchmark.js';
import { parseEvaluationInput } from '../../workflows/contracts/evaluation.input.js';
import { parseLearnerInput } from '../../workflows/contracts/learner.input.js';
import { parseRlHyperparameters } from '../../gpu/train/train-step.schema.js';
import type { RewardMetric } from '../../workflows/contracts/trajectory.contract.js';
import type { QuestionRow } from '../../workflows/contracts/learner.contract.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import { parseTrajectoryInput } from '../../workflows/contracts/trajectory.input.js';
import { parseWarmStartInput } from '../../workflows/contracts/warm-start.input.js';
import { integerFlag, parseFlags, rateFlag } from '../arguments.js';
import { UsageError } from '../command.js';
import { preflight } from '../preflight.js';
import { inferenceSwitch } from '../restart-inference.js';
import { cancelLeftoverRollouts } from '../leftover-rollouts.js';
import { refuseConcurrentTraining, refuseUsedRunIds } from '../training-guard.js';
import { createPgReportSource } from '../../infra/postgres/report-source.pg.js';
import { demoRolloutTemperature, rlRewardMetrics } from '../demo/plan.js';
import { resolveDataset } from './eval.command.js';
import { repositoryCommit } from '../../composition/benchmark-runner.js';

/** The flag behind each warm-start, hyperparameter and evaluation field, for preflight refusals. */
const transferFlags = {
  runId: 'run-id',
  resultId: 'run-id',
  'hyperparameters.learningRate': 'lr',
  'hyperparameters.epochs': 'epochs',
  'hyperparameters.batchSize': 'batch',
  'hyperparameters.microBatchSize': 'micro-batch',
  'hyperparameters.trainable': 'lora-rank',
  learningRate: 'lr',
  epochs: 'epochs',
  batchSize: 'batch',
  microBatchSize: 'micro-batch',
  trainable: 'lora-rank',
  'limits.maxTurns': 'max-turns',
  'limits.maxNewTokensPerTurn': 'max-new-tokens',
  'trajectory.limits.maxTurns': 'max-turns',
  'trajectory.limits.maxNewTokensPerTurn': 'max-new-tokens',
  k: 'k',
  concurrency: 'concurrency',
  seed: 'seed',
  'settings.maxSteps': 'steps',
  'settings.batchSize': 'batch',
  'settings.groupSize': 'group',
  groupSize: 'group',
  'settings.eta': 'eta',
  'options.temperature': 'temperature',
  'trajectory.options.temperature': 'temperature',
  rewardMetric: 'reward',
};

/** The defaults that differ by stage: the warm start's gold replays, or the learner's RL steps (session 24's rate for full RL). */
const stageDefaults = {
  sft: { batch: 4, lr: 1e-4, maxTurns: 3 },
  rl: { batch: 16, lr: 5e-6, maxTurns: 6 },
} as const;

export const transferBenchmark = {
  summary: 'transfer by freezing: last N layers vs LoRA vs full fine-tuning on one warm-start or RL budget, evaluated side by side',
  usage: `longhaul bench transfer [--stage sft|rl] [--dataset FILE] [--train-questions N] [--eval-dataset NAME|FILE] [--eval-questions N]
                       [--start-version V] [--modes freeze,lora,full] [--freeze-layers N] [--lora-rank R]
                       [--epochs N] [--batch N] [--micro-batch N] [--lr X] [--seed S] [-k K] [--concurrency C]
                       [--steps N] [--group N] [--eta N] [--temperature T] [--reward METRIC] [--keep-equal-groups]
                       [--max-turns N] [--max-new-tokens N] [--run-id ID] [--json]

From one start policy version and one training set, trains once per trainable mode — the last N
decoder layers and the final norm with the rest frozen, LoRA of rank R (α = 2R) on every projection,
full fine-tuning — each from its own copy of the start version, with the same budget:
  --stage sft (default)  the warm start: gold paths replayed through the agent loop under the start
                         version, then sftStep (same data, seed, epochs, batch and learning rate)
  --stage rl             RL: the learner over the same questions in the same order (each once), the same
                         steps, batch, group, temperature, reward and learning rate; the start version is
                         evaluated too, and each mode is compared with it (the RL gain)
Each trained version is evaluated by the evaluation workflow on the same held-out questions (Avg@k EM
with its 95 % bootstrap interval), and compared with full fine-tuning question by question (paired
difference, 95 % bootstrap interval). Cost per mode: the engine's update seconds per optimizer step,
trainable parameters, the engine process's peak RSS. The gpu-infer worker is restarted to serve each
version in turn (and restored at the end). Refused (exit 2) while a learner or warm start trains on
the stack. The result is stored in benchmark_results (id = the run id); \`longhaul report --run ID\`
shows it as a table and charts.

  --dataset FILE       training JSONL of {"id","question","answers","goldTurns"} (goldTurns: stage sft only;
                       default: the demo's grounded capital questions from the default corpus's knowledge
                       base: longhaul corpus build)
  --train-questions N  training questions used, the first N (default 16; stage rl: 2 × steps × batch / group,
                       since groups dropped as stale or all-equal are replaced by the next question; each
                       mode draws them in the same order, each once)
  --eval-dataset S     held-out questions, any known layout or a set under the data root (default: held-out
                       capital questions, disjoint from the training ones)
  --eval-questions N   held-out questions used, the first N (default 20)
  --start-version V    the version every mode starts from (default: the latest)
  --modes LIST         modes to run, comma-separated (default freeze,lora,full; full is the reference and required)
  --freeze-layers N    decoder layers trained by "freeze": the last N (default 4)
  --lora-rank R        LoRA rank (default 16)
  --epochs N           warm-start epochs (stage sft; default 3)   --micro-batch N (default 2)
  --batch N            trajectories per optimizer step (sft, default 4) or per training step (rl, default 16)
  --lr X               learning rate, the same for every mode (default 1e-4 for sft, 5e-6 for rl: full RL at
                       3e-5 lost the output format within 4 steps, docs/BENCHMARKS.md "Session 24")
  --seed S             (default 0)
  --steps N            RL training steps (stage rl; default 4)   --group N  samples per question (default 4)
  --eta N              max staleness in versions (default 4)     --keep-equal-groups  train on all-equal groups too
  --temperature T      RL rollout temperature (default ${demoRolloutTemperature}; the evaluations stay greedy)
  --reward METRIC      RL reward: ${rlRewardMetrics.join(', ')} (default f1_format)
  -k K                 samples per held-out question (default 1, greedy)         --concurrency C  (default 4)
  --max-turns N        turns per trajectory (default 3 for sft, 6 for rl)   --max-new-tokens N  per turn (default 48)
  --json               last line: {"benchmark":"transfer","run_id","stage","start_version","train_questions","heldout_questions",
                       "k","budget":{…},"start":{…} (rl),"modes":[{"mode","version","trainable_parameters","update_seconds_per_step",
                       "train_seconds","peak_rss_mb","em","em_ci95","em_vs_full","em_vs_full_ci95","em_vs_start" (rl),…}],"seconds"}`,
  async run(args: string[]): Promise<number> {
    const { values } = parseFlags(args, {
      stage: { type: 'string' },
      steps: { type: 'string' },
      group: { type: 'string' },
      eta: { type: 'string' },
      temperature: { type: 'string' },
      reward: { type: 'string' },
      'keep-equal-groups': { type: 'boolean' },
      dataset: { type: 'string' },
      'train-questions': { type: 'string' },
      'eval-dataset': { type: 'string' },
      'eval-questions': { type: 'string' },
      'start-version': { type: 'string' },
      modes: { type: 'string' },
      'freeze-layers': { type: 'string' },
      'lora-rank': { type: 'string' },
      epochs: { type: 'string' },
      batch: { type: 'string' },
      'micro-batch': { type: 'string' },
      lr: { type: 'string' },
      seed: { type: 'string' },
      k: { type: 'string', short: 'k' },
      concurrency: { type: 'string' },
      'max-turns': { type: 'string' },
      'max-new-tokens': { type: 'string' },
      'run-id': { type: 'string' },
      json: { type: 'boolean' },
    });
    const stage = (values.stage ?? 'sft') as TransferStage;
    if (!(transferStages as readonly string[]).includes(stage))
      throw new UsageError(`--stage expects sft (the warm start) or rl (the learner), got "${values.stage}"`);
    if (stage === 'sft')
      for (const flag of ['steps', 'group', 'eta', 'temperature', 'reward', 'keep-equal-groups'] as const)
        if (values[flag] !== undefined) throw new UsageError(`--${flag} is an RL setting; add --stage rl or leave it out`);
    if (stage === 'rl' && values.epochs !== undefined) throw new UsageError('--epochs is a warm-start setting; RL takes --steps');
    const defaults = stageDefaults[stage];
    const rlSteps = integerFlag(values.steps, 'steps', 4, 1, 100_000);
    const group = integerFlag(values.group, 'group', 4, 1, 256);
    const batch = integerFlag(values.batch, 'batch', defaults.batch, 1, 4096);
    const reward = values.reward ?? 'f1_format';
    if (!(rlRewardMetrics as readonly string[]).includes(reward))
      throw new UsageError(`--reward expects one of ${rlRewardMetrics.join(', ')}, got "${reward}"`);
    const temperature = values.temperature === undefined ? demoRolloutTemperature : Number(values.temperature);
    if (values.temperature !== undefined && (values.temperature.trim() === '' || !(temperature > 0 && temperature <= 5)))
      throw new UsageError(
        `--temperature expects a number above 0 and at most 5 (RL samples; 0 would make every group equal), got "${values.temperature}"`,
      );
    const trainCount = integerFlag(
      values['train-questions'],
      'train-questions',
      stage === 'rl' ? 2 * Math.ceil((rlSteps * batch) / group) : 16,
      1,
      100_000,
    );
    const evalCount = integerFlag(values['eval-questions'], 'eval-questions', 20, 1, 100_000);
    const freezeLayers = integerFlag(values['freeze-layers'], 'freeze-layers', 4, 1, 10_000);
    const loraRank = integerFlag(values['lora-rank'], 'lora-rank', 16, 1, 4096);
    const requestedVersion =
      values['start-version'] === undefined ? undefined : integerFlag(values['start-version'], 'start-version', 0, 0, 1_000_000_000);
    const modeNames = (values.modes ?? transferModeNames.join(',')).split(',').map((name) => name.trim());
    for (const name of modeNames)
      if (!(transferModeNames as readonly string[]).includes(name))
        throw new UsageError(`--modes: unknown mode "${name}" (modes: ${transferModeNames.join(', ')})`);
    if (new Set(modeNames).size !== modeNames.length) throw new UsageError(`--modes: a mode is named twice in "${values.modes}"`);
    if (!modeNames.includes('full')) throw new UsageError('--modes must include full: the paired differences are taken against it');
    let fileRows: QuestionRow[] | undefined;
    if (values.dataset !== undefined) {
      if (!fs.existsSync(values.dataset)) throw new UsageError(`--dataset: "${values.dataset}" does not exist`);
      try {
        fileRows = parseQuestions(fs.readFileSync(values.dataset, 'utf8'), path.basename(values.dataset)).slice(0, trainCount);
      } catch (error) {
        throw new UsageError(`--dataset: ${(error as Error).message}`);
      }
      if (stage === 'sft' && !fileRows.some((row) => row.goldTurns?.length))
        throw new UsageError(`--dataset: no row of ${values.dataset} has "goldTurns"; the warm start replays gold solution paths`);
    }
    let heldOutSet: { name: string; rows: QuestionRow[] } | undefined;
    if (values['eval-dataset'] !== undefined) {
      const set = await resolveDataset(values['eval-dataset'], { limit: evalCount }).catch((error: unknown) => {
        throw new UsageError(`--eval-dataset: ${(error as Error).message.replace(/^--dataset: /, '')}`);
      });
      if (set.items.length === 0) throw new UsageError(`--eval-dataset: ${set.path} has no usable question`);
      heldOutSet = { name: set.name, rows: set.items.map(toQuestionRow) };
    }
    const runId = values['run-id'] ?? `transfer-${new Date().toISOString().replace(/[:.]/g, '-').toLowerCase()}`;
    const commit = repositoryCommit() || undefined;
    const placeholder: TransferOptions = {
      runId,
      startVersion: requestedVersion ?? 0,
      train: fileRows ?? [],
      heldOut: heldOutSet ?? { name: 'capitals-heldout', rows: [] },
      modes: transferModes(Math.max(freezeLayers, 1), freezeLayers, loraRank).filter((mode) => modeNames.includes(mode.mode)),
      stage,
      budget: {
        epochs: integerFlag(values.epochs, 'epochs', 3, 1, 1000),
        batch,
        microBatch: integerFlag(values['micro-batch'], 'micro-batch', 2, 1, 4096),
        learningRate: rateFlag(values.lr, 'lr', defaults.lr),
        seed: integerFlag(values.seed, 'seed', 0, 0, 2 ** 31 - 1),
      },
      ...(stage === 'rl'
        ? {
            rl: {
              steps: rlSteps,
              group,
              eta: integerFlag(values.eta, 'eta', 4, 0, 1000),
              temperature,
              reward: reward as RewardMetric,
              keepEqualGroups: values['keep-equal-groups'] === true,
            },
          }
        : {}),
      trajectory: {
        limits: {
          maxTurns: integerFlag(values['max-turns'], 'max-turns', defaults.maxTurns, 1, 1000),
          maxNewTokensPerTurn: integerFlag(values['max-new-tokens'], 'max-new-tokens', 48, 1, 65_536),
        },
        options: { maxObservationChars: 600 },
      },
      k: integerFlag(values.k, 'k', 1, 1, 256),
      concurrency: integerFlag(values.concurrency, 'concurrency', 4, 1, 10_000),
      args,
      ...(commit ? { commit } : {}),
    };
    preflight(() => {
      for (const mode of placeholder.modes) {
        if (stage === 'sft') {
          const warmStart = warmStartInputFor(placeholder, mode, 0, 'preflight');
          parseWarmStartInput(warmStart);
          parseSftHyperparameters(warmStart.hyperparameters!);
        } else {
          const learner = learnerInputFor(placeholder, mode, 0, 'preflight');
          const { settings: checked } = parseLearnerInput(learner);
          parseTrajectoryInput({ question: 'preflight', ...learner.trajectory });
          parseRlHyperparameters(learner.hyperparameters!, checked.groupSize);
        }
        parseTrajectoryInput({ question: 'preflight', ...placeholder.trajectory });
        parseEvaluationInput({ ...evaluationInputFor(placeholder, mode.mode, 0, 'preflight'), questions: 1 });
      }
    }, transferFlags);

    const settings = config();
    await stackUp(settings, { workers: true });
    const services = openServices(settings, { poolSize: 4 });
    const inference = inferenceSwitch((line) => console.error(line));
    try {
      const client = await services.client();
      await refuseConcurrentTraining(client, []);
      await refuseUsedRunIds(
        createPgReportSource(services.pool),
        modeNames.map((mode) => `${runId}-${mode}`),
        'run-id',
      );
      const latest = await services.versions.latest();
      if (!latest) throw new UsageError('--start-version: no policy version is registered yet; run `longhaul model prepare` first');
      const startVersion = requestedVersion ?? latest.version;
      const start = await services.versions.get(startVersion);
      if (!start)
        throw new UsageError(`--start-version: policy version ${startVersion} is not registered (the latest is ${latest.version})`);
      const modelConfig = JSON.parse((await services.blobs.get(`${start.blobPrefix}config.json`)).toString('utf8')) as {
        num_hidden_layers?: number;
      };
      const layers = modelConfig.num_hidden_layers;
      if (typeof layers !== 'number') throw new Error(`policy version ${startVersion}: config.json has no num_hidden_layers`);
      if (freezeLayers > layers)
        throw new UsageError(`--freeze-layers ${freezeLayers}: policy version ${startVersion} has only ${layers} decoder layers`);
      let train = fileRows;
      let heldOut = heldOutSet;
      if (!train || !heldOut) {
        const capitals = await capitalQuestions(services.pool, trainCount, evalCount).catch((error: unknown) => {
          throw new UsageError(
            `--dataset/--eval-dataset not given, and the demo's capital questions are not available: ${(error as Error).message}`,
          );
        });
        train ??= capitals.train.slice(0, trainCount);
        heldOut ??= { name: 'capitals-heldout', rows: capitals.heldOut.slice(0, evalCount) };
      }
      const options: TransferOptions = {
        ...placeholder,
        startVersion,
        train,
        heldOut,
        modes: transferModes(layers, freezeLayers, loraRank).filter((mode) => modeNames.includes(mode.mode)),
      };
      console.error(
        `transfer ${runId} (${stage === 'rl' ? 'RL' : 'warm start'}): v${startVersion} (${layers} layers), ${train.length} training questions, ${heldOut.rows.length} held-out (${heldOut.name}), modes ${modeNames.join(', ')}`,
      );
      const result = await runTransferBenchmark(
        {
          client,
          queue: (role) => taskQueueName(role, settings.taskQueuePrefix),
          blobs: services.blobs,
          versions: services.versions,
          results: createPgBenchmarkResultStore(services.pool),
          serveVersion: (version) => inference.serve(version),
          cancelLeftoverRollouts: (learnerRunId) => cancelLeftoverRollouts(client, learnerRunId),
          log: (line) => console.error(line),
        },
        options,
      );
      if (!values.json) for (const line of formatTransfer(result)) console.log(line);
      if (!values.json) console.log(`report: longhaul report --run ${runId}`);
      console.log(JSON.stringify(result));
      return 0;
    } finally {
      await inference
        .restore()
        .catch((error: unknown) =>
          console.error(`worker-gpu-infer could not be restarted on the version it served before: ${(error as Error).message}`),
        );
      await services.close();
    }
  },
};
