/**
 * The LLM-driven synthesizer on the real stack, against a local OpenAI-compatible server that replays
 * recorded chat replies (test/doubles/chat-replay-server.ts): one question accepted end to end through
 * synthesisRun (its evidence re-verified against the stored documents, its uniqueness weighed against
 * ≥ 20 distinct wrong answers), and garbage replies — not JSON, JSON cut short, wrong fields, a 500, a
 * hang ended by the time limit, a response without choices, the answer in the question, a quote no
 * stored document holds — each a recorded rejection with its reason, never a failed or stuck run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findEvidence, verifyEvidence } from '../activities/synthesis/evidence.js';
import { KnowledgeGraph } from '../activities/synthesis/knowledge-graph.js';
import { llmSeedEntity } from '../activities/synthesis/llm.synthesizer.js';
import { datasetBlobKey } from '../activities/synthesis/synthesis.activities.js';
import type { KnowledgeBaseEntity, KnowledgeBaseRelation } from '../activities/ports/knowledge-base.port.js';
import { createPgKnowledgeBase } from '../infra/postgres/knowledge-base.pg.js';
import { createPgSynthesisStore } from '../infra/postgres/synthesis-store.pg.js';
import { synthesisRunWorkflowType, type SynthesisFact, type SynthesisRunResult } from '../workflows/contracts/synthesis.contract.js';
import { taskSeed } from '../workflows/synthesis.workflow.js';
import { jsonReply, startChatReplayServer, type ChatReplayServer, type ReplayReply } from './doubles/chat-replay-server.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';
import { startSynthesisAgent, type SynthesisAgent, type SynthesisCorpus } from './helpers/synthesis.js';

describe('the LLM-driven synthesizer against a replaying chat server', () => {
  const prefix = uniquePrefix('synthllm');
  let context: TestContext;
  let corpus: SynthesisCorpus;
  let agent: SynthesisAgent;
  let replay: ChatReplayServer;
  let graph: KnowledgeGraph;

  /** A country's fact of `predicate` with the sentence of its document that states it. */
  async function stated(
    entity: KnowledgeBaseEntity,
    predicate: string,
  ): Promise<{ relation: KnowledgeBaseRelation; quote: string } | null> {
    const relation = graph.relations(entity.id, predicate)[0];
    if (!relation) return null;
    const document = (await createPgKnowledgeBase(corpus.pool).documents([relation.documentId])).get(relation.documentId);
    const evidence = document ? findEvidence(relation, document) : null;
    return evidence ? { relation, quote: evidence.text } : null;
  }

  before(async () => {
    context = await openContext(prefix);
    replay = await startChatReplayServer({});
    agent = await startSynthesisAgent(context, 'synthllm', {
      synthesisLlm: { baseUrl: replay.baseUrl, model: 'replay-model', apiKey: null, timeoutMs: 1500 },
    });
    corpus = agent.corpus;
    graph = new KnowledgeGraph(await createPgKnowledgeBase(corpus.pool).snapshot(['country', 'city']));
  });
  after(async () => {
    await agent?.close();
    await replay?.close();
    await context?.close();
  });

  it(
    'accepts a question end to end: facts grounded in stored spans, ≥ 20 wrong answers weighed, solved, hard',
    { timeout: 300_000 },
    async () => {
      // Pick a run seed whose task 0 seeds a country with a stated capital and a stated neighbour (the replies are fixed before the run).
      let runSeed = 0;
      let plan: {
        country: KnowledgeBaseEntity;
        capital: { relation: KnowledgeBaseRelation; quote: string };
        border: { quote: string; name: string; documentId: string };
      } | null = null;
      for (; runSeed < 200 && !plan; runSeed += 1) {
        const country = llmSeedEntity(graph, taskSeed(runSeed, 0), 0);
        if (!country) continue;
        const capital = await stated(country, 'capital');
        const border = await stated(country, 'borders');
        const neighbour = border?.relation.objectText ?? '';
        if (
          !capital ||
          !border ||
          neighbour === '' ||
          capital.relation.objectText.includes(country.name) ||
          neighbour.includes(country.name)
        )
          continue;
        plan = { country, capital, border: { quote: border.quote, name: neighbour, documentId: border.relation.documentId } };
        runSeed -= 1;
      }
      assert.ok(plan, 'a seed country with a stated capital and neighbour');
      const { country, capital, border } = plan;
      const answer = capital.relation.objectText;
      const injected = `What is the capital of the country that borders ${border.name}?`;
      const fuzzed = `What is the capital of the country that borders a country whose name starts with "${border.name[0]}" and has ${border.name.length} letters?`;
      replay.enqueue('seed', jsonReply({ question: `What is the capital of ${country.name}?`, answer, quote: capital.quote }));
      replay.enqueue('inject', jsonReply({ question: injected, document_id: border.documentId, quote: border.quote, named: border.name }));
      replay.enqueue('verify', jsonReply({ answer }), { content: `Sure! {"answer": "${answer}"}` });
      replay.enqueue('fuzz', jsonReply({ question: fuzzed, obscured: border.name, replacement: 'a country by its initial and length' }));
      replay.enqueue('exit', { content: '```json\n' + JSON.stringify({ question: fuzzed }) + '\n```' });
      const guesses = Array.from({ length: 24 }, (_, index) => `Wrong City ${String.fromCharCode(65 + index)}`);
      replay.enqueue('guesses', jsonReply({ answers: [answer, ...guesses] }));
      replay.enqueue('alternatives', jsonReply({ also_correct: [answer], rationale: 'only the known answer fits' }));

      const datasetId = `${prefix}ok`;
      const run: SynthesisRunResult = await context.client.workflow.execute(synthesisRunWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}run-ok`,
        args: [
          {
            datasetId,
            count: 1,
            seed: runSeed,
            synthesizer: 'llm',
            concurrency: 1,
            settings: { targetHops: 1, targetFuzzes: 1, llmAttempts: 2 },
          },
        ],
      });
      const store = createPgSynthesisStore(corpus.pool);
      const [row] = await store.candidates(datasetId);
      assert.equal(run.accepted, 1, `accepted (${row?.reason})`);
      assert.deepEqual(
        replay.calls.map((call) => call.prompt),
        ['seed', 'inject', 'verify', 'fuzz', 'verify', 'exit', 'guesses', 'alternatives'],
        'one call per action: nothing asked twice',
      );
      assert.ok(replay.calls.every((call) => call.model === 'replay-model'));

      const item = JSON.parse((await context.blobs.get(datasetBlobKey(datasetId))).toString('utf8').trim()) as {
        question: string;
        answers: string[];
        goldTurns: string[];
        provenance: {
          facts: SynthesisFact[];
          verdicts: { check: string; passed: boolean; details: Record<string, unknown> }[];
          injections: number;
          fuzzes: number;
        };
      };
      assert.equal(item.question, fuzzed);
      assert.deepEqual(item.answers, [answer]);
      assert.equal(item.provenance.injections, 1);
      assert.equal(item.provenance.fuzzes, 1);
      // Every fact's span re-verified against the stored document: same content hash, span hash, text, and it states the fact.
      const documents = await createPgKnowledgeBase(corpus.pool).documents(item.provenance.facts.map((fact) => fact.evidence.documentId));
      assert.equal(item.provenance.facts.length, 2);
      for (const fact of item.provenance.facts)
        assert.equal(verifyEvidence(fact.evidence, fact, documents.get(fact.evidence.documentId)), null);
      const uniqueness = item.provenance.verdicts.find((verdict) => verdict.check === 'uniqueness')!;
      assert.equal(uniqueness.passed, true);
      const wrong = uniqueness.details.wrongAnswers as { answer: string; sources: string[] }[];
      assert.ok(wrong.length >= 20, `${wrong.length} distinct wrong answers`);
      assert.ok(!wrong.some((entry) => entry.answer === answer), 'the gold answer is not counted as an alternative');
      assert.ok(wrong.some((entry) => entry.sources.includes('closed-book policy')));
      // The evidence-only check is recorded (the default on the LLM path), not gating: the scripted policy searches instead of answering.
      assert.deepEqual(item.provenance.verdicts.map((verdict) => [verdict.check, verdict.passed]).sort(), [
        ['contamination', true],
        ['difficulty', true],
        ['evidence', false],
        ['grounding', true],
        ['quality', true],
        ['solvability', true],
        ['uniqueness', true],
      ]);
      const evidence = item.provenance.verdicts.find((verdict) => verdict.check === 'evidence')!;
      const shown = evidence.details.passages as { documentId: string; gold: boolean }[];
      const goldDocuments = new Set(item.provenance.facts.map((fact) => fact.evidence.documentId));
      assert.deepEqual(new Set(shown.filter((passage) => passage.gold).map((passage) => passage.documentId)), goldDocuments);
      assert.ok(shown.filter((passage) => !passage.gold).length >= 1, 'distractors from searching the question');
      assert.ok(
        shown.every((passage) => passage.gold || !goldDocuments.has(passage.documentId)),
        'no gold document as a distractor',
      );
      assert.match(evidence.details.reply as string, /<search>/);
      assert.equal(evidence.details.gate, false);
      assert.ok(item.goldTurns.at(-1)!.includes(`<answer>${answer}</answer>`));

      // The chat model's tokens, from the endpoint's usage field (the replay server: 50 prompt tokens and ⌈length / 4⌉ completion tokens a reply).
      assert.ok(replay.calls.every((call) => call.usage !== null));
      const expectedCompletion = replay.calls.reduce((sum, call) => sum + call.usage!.completionTokens, 0);
      const usage = (row!.candidate as { llmUsage?: { calls: number; promptTokens: number; completionTokens: number } }).llmUsage;
      assert.deepEqual(usage, { calls: 8, promptTokens: 8 * 50, completionTokens: expectedCompletion });
      assert.ok(row!.tokens >= 8 * 50 + expectedCompletion, `the candidate's tokens (${row!.tokens}) include the chat model's`);
      assert.deepEqual(run.llm, {
        calls: 8,
        promptTokens: 400,
        completionTokens: expectedCompletion,
        tokensPerCandidate: 400 + expectedCompletion,
      });
      assert.deepEqual(run.evidenceOnly, { checked: 1, passed: 0, passRate: 0, failedWhereSolverPassed: 1 });
      const uniquenessUsage = uniqueness.details.llmUsage as { calls: number };
      assert.equal(uniquenessUsage.calls, 2, 'the judge calls (guesses, alternatives) are counted in the verdict');

      // The same candidate with evidenceCheck "gate": the evidence-only failure now rejects it, with its reason.
      replay.calls.length = 0;
      replay.enqueue('seed', jsonReply({ question: `What is the capital of ${country.name}?`, answer, quote: capital.quote }));
      replay.enqueue('inject', jsonReply({ question: injected, document_id: border.documentId, quote: border.quote, named: border.name }));
      replay.enqueue('verify', jsonReply({ answer }), jsonReply({ answer }));
      replay.enqueue('fuzz', jsonReply({ question: fuzzed, obscured: border.name, replacement: 'a country by its initial and length' }));
      replay.enqueue('exit', jsonReply({ question: fuzzed }));
      const gated: SynthesisRunResult = await context.client.workflow.execute(synthesisRunWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}run-gated`,
        args: [
          {
            datasetId: `${prefix}gated`,
            count: 1,
            seed: runSeed,
            synthesizer: 'llm',
            concurrency: 1,
            settings: { targetHops: 1, targetFuzzes: 1, llmAttempts: 2, evidenceCheck: 'gate', evidenceDistractors: 2 },
          },
        ],
      });
      const [gatedRow] = await store.candidates(`${prefix}gated`);
      assert.equal(gated.accepted, 0);
      assert.match(gatedRow!.reason, /^evidence: did not answer from \d+ gold and 2 distractor passages without tools/);
      assert.deepEqual(
        replay.calls.map((call) => call.prompt),
        ['seed', 'inject', 'verify', 'fuzz', 'verify', 'exit'],
        'rejected before the closed-book samples and the uniqueness judge',
      );
    },
  );

  it('turns every kind of garbage reply into a recorded rejection with its reason', { timeout: 300_000 }, async () => {
    const runSeed = 5;
    const seedOf = (taskIndex: number) => llmSeedEntity(graph, taskSeed(runSeed, taskIndex), taskIndex)!;
    const leak = await stated(seedOf(6), 'capital');
    const leaked = leak?.relation.objectText ?? 'unknown';
    const garbage: readonly [ReplayReply, RegExp][] = [
      [{ content: "I'm sorry, as a language model I can only write prose." }, /^synthesis: seed: not JSON/],
      [{ content: '{"question": "What is the capital of' }, /^synthesis: seed: truncated JSON/],
      [jsonReply({ q: 'What is it?', a: 'x' }), /^synthesis: seed: missing or invalid fields .*question/],
      [{ status: 500, message: 'CUDA out of memory' }, /^synthesis: seed: endpoint failed .*500/],
      [{ hang: true }, /^synthesis: seed: endpoint failed/],
      [{ body: { id: 'x', object: 'chat.completion', choices: [] } }, /^synthesis: seed: (endpoint failed|empty reply)/],
      [
        jsonReply({ question: `Is ${leaked} the capital of ${seedOf(6).name}?`, answer: leaked, quote: leak?.quote ?? 'none' }),
        leak ? /^synthesis: seed: answer in the question/ : /^synthesis: seed: ungrounded/,
      ],
      [
        jsonReply({ question: `What is the capital of ${seedOf(7).name}?`, answer: 'Cheese', quote: 'The moon is made of green cheese.' }),
        /^synthesis: seed: ungrounded .*not in document/,
      ],
    ];
    replay.enqueue('seed', ...garbage.map(([reply]) => reply));
    const datasetId = `${prefix}garbage`;
    const run: SynthesisRunResult = await context.client.workflow.execute(synthesisRunWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId: `${prefix}run-garbage`,
      args: [
        {
          datasetId,
          count: garbage.length,
          seed: runSeed,
          synthesizer: 'llm',
          concurrency: 1,
          settings: { targetHops: 1, llmAttempts: 1 },
        },
      ],
    });
    assert.equal(run.candidates, garbage.length, 'every task recorded');
    assert.equal(run.accepted, 0);
    const rows = (await createPgSynthesisStore(corpus.pool).candidates(datasetId)).sort((a, b) => a.taskIndex - b.taskIndex);
    for (const [index, [, why]] of garbage.entries()) {
      console.log(`garbage ${index}: ${rows[index]!.reason}`);
      assert.match(rows[index]!.reason, why, `task ${index}`);
    }
    assert.ok(Object.keys(run.rejectionsByReason).length >= 4, JSON.stringify(run.rejectionsByReason));
    // Each task asked once (llmAttempts 1); a call that failed or hung is counted too, with no tokens.
    for (const row of rows) assert.equal((row.candidate as { llmUsage?: { calls: number } }).llmUsage?.calls, 1, `task ${row.taskIndex}`);
    assert.equal(run.llm!.calls, garbage.length);
  });

  it(
    "solves with the reference policy's own tool use when settings.solverMode is policy (pass@k over k runs)",
    { timeout: 300_000 },
    async () => {
      const datasetId = `${prefix}policy`;
      await context.client.workflow.execute(synthesisRunWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}run-policy`,
        args: [{ datasetId, count: 3, seed: 11, concurrency: 3, settings: { solverMode: 'policy', solverAttempts: 2, solverMaxTurns: 4 } }],
      });
      const store = createPgSynthesisStore(corpus.pool);
      const rows = await store.candidates(datasetId);
      const verdicts = (await store.verdicts(rows.map((row) => row.workflowId))).filter((verdict) => verdict.check === 'solvability');
      assert.ok(verdicts.length >= 1, `a candidate reached the solver (${rows.map((row) => row.reason).join('; ')})`);
      for (const verdict of verdicts) {
        const attempts = verdict.details.attempts as { toolCalls: number; why: string }[];
        assert.equal(verdict.details.mode, 'policy');
        assert.equal(attempts.length, 2, 'k = 2 runs');
        // The scripted policy searches on its own (no gold turns forced) and then answers wrongly: not solved, with the reason.
        assert.ok(attempts.every((attempt) => attempt.toolCalls >= 1));
        assert.equal(verdict.passed, false);
        assert.match(verdict.reason, /no tool-using run solved it: reward 0/);
      }
    },
  );
});
