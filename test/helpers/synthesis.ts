/** Shared setup of the synthesis tests: a default corpus (countries, cities ≥ 1M, elements) in a schema of its own. */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { buildDefaultCorpus } from '../../corpus/default-corpus.js';
import { dropSchema, openSchemaPool } from '../../infra/search/open.js';
import type { Config } from '../../infra/config.js';
import type { ContaminationLookup } from '../../activities/synthesis/synthesis.activities.js';
import { ContaminationIndex } from '../../activities/question-sets/contamination.js';
import { createToolActivities } from '../../activities/tools/run-tools.activities.js';
import { buildToolRegistry } from '../../composition/tool-registry.js';
import { createInProcessAgent } from '../../composition/in-process-agent.js';
import { createPgToolCallStore } from '../../infra/search/tool-call-store.pg.js';
import { createScriptedPolicy } from '../doubles/scripted-policy.js';
import type { PolicyBackend } from '../../activities/ports/policy.port.js';
import type { TestContext } from './stack.js';

export interface SynthesisCorpus {
  readonly pool: pg.Pool;
  /** DATABASE_URL of the schema, for worker processes. */
  readonly databaseUrl: string;
  close(): Promise<void>;
}

export async function synthesisCorpus(settings: Config, label: string): Promise<SynthesisCorpus> {
  const schema = `test_${label}_${randomUUID().slice(0, 8)}`;
  const pool = await openSchemaPool(settings.postgres.url, schema, 6);
  await buildDefaultCorpus(pool, { toolsDir: settings.toolsDir, minCityPopulation: 1_000_000, wikipedia: false });
  const url = new URL(settings.postgres.url);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    pool,
    databaseUrl: url.toString(),
    async close() {
      await pool.end();
      await dropSchema(settings.postgres.url, schema);
    },
  };
}

/** A contamination index (the real one) over one small evaluation set of these questions. */
export function evaluationSetIndex(questions: readonly string[]): () => Promise<ContaminationLookup> {
  return async () =>
    new ContaminationIndex().add(
      'test-set',
      questions.map((question, index) => ({ id: `q${index}`, question })),
    );
}

export interface SynthesisAgent {
  readonly corpus: SynthesisCorpus;
  /** Stops the workers, then drops the corpus schema. */
  close(): Promise<void>;
}

/**
 * The stack every synthesis test runs on: a default corpus of its own, and in-process agent, tools
 * and inference workers under the context's prefix (scripted policy, the real tools over that corpus,
 * a contamination index of one Atlantis question), running until `close`.
 */
export async function startSynthesisAgent(
  context: TestContext,
  label: string,
  options: { readonly synthesisLlm?: Config['synthesisLlm']; readonly backend?: PolicyBackend } = {},
): Promise<SynthesisAgent> {
  const corpus = await synthesisCorpus(context.config, label);
  const registry = buildToolRegistry(context.config, corpus.pool);
  const agent = await createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: corpus.pool,
    backend: options.backend ?? createScriptedPolicy(),
    tools: createToolActivities({ registry: registry.registry, store: createPgToolCallStore(corpus.pool) }),
    prefix: context.config.taskQueuePrefix,
    contamination: evaluationSetIndex(['What is the capital of Atlantis, the sunken island?']),
    ...(options.synthesisLlm ? { synthesisLlm: options.synthesisLlm } : {}),
  }).catch(async (error: unknown) => {
    await registry.close();
    await corpus.close();
    throw error;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const running = agent.run(() => released);
  return {
    corpus,
    async close() {
      release();
      await running;
      await registry.close();
      await corpus.close();
    },
  };
}
