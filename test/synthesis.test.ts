/**
 * The data-synthesis agent on the real stack: a synthesisRun over the default corpus's knowledge
 * base with the scripted policy (closed-book baseline) and the real search/access tools (reference
 * solver), and every check's accept and reject path on a real candidate; bad input fails the
 * workflows at once, naming the field.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { parseQuestions } from '../activities/learner.activities.js';
import { createSynthesisActivities, datasetBlobKey } from '../activities/synthesis/synthesis.activities.js';
import { wilsonLowerBound } from '../activities/synthesis/checks.js';
import { synthesisDependencies } from '../composition/queue-activities.js';
import { createPgSynthesisStore } from '../infra/postgres/synthesis-store.pg.js';
import { synthesisRunWorkflowType, type SynthesisCandidate, type SynthesisRunResult } from '../workflows/contracts/synthesis.contract.js';
import type { PolicyBackend } from '../activities/ports/policy.port.js';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';
import { evaluationSetIndex, startSynthesisAgent, type SynthesisAgent, type SynthesisCorpus } from './helpers/synthesis.js';

describe('the data-synthesis agent', () => {
  const prefix = uniquePrefix('synth');
  let context: TestContext;
  let corpus: SynthesisCorpus;
  let agent: SynthesisAgent;
  let run: SynthesisRunResult;

  // The solvability replay takes the gold turns as they are: the policy is never asked to score forced text.
  const scripted = createScriptedPolicy();
  let forcedRequests = 0;
  const countingForced: PolicyBackend = {
    ...scripted,
    generate(request, signal) {
      if (request.forcedText !== undefined) forcedRequests += 1;
      return scripted.generate(request, signal);
    },
  };

  before(async () => {
    context = await openContext(prefix);
    agent = await startSynthesisAgent(context, 'synth', { backend: countingForced });
    corpus = agent.corpus;
  });
  after(async () => {
    await agent?.close();
    await context?.close();
  });

  it(
    'runs a dataset whose accepted items are proved unique, grounded, solved through the real tools and hard',
    { timeout: 300_000 },
    async () => {
      run = await context.client.workflow.execute(synthesisRunWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}run`,
        args: [{ datasetId: `${prefix}ds`, count: 6, seed: 11, concurrency: 3, tasksPerExecution: 4 }],
      });
      console.log(JSON.stringify(run));
      assert.equal(run.candidates, 6, 'every task is recorded, across a continue-as-new');
      assert.ok(run.accepted >= 1, `at least one accepted item (${JSON.stringify(run.rejectionsByReason)})`);
      assert.ok(run.injectionsPerQuestion >= 3 && run.hopsPerQuestion === 3, `chains of 3 hops (${run.hopsPerQuestion})`);
      assert.ok(run.medianSolverToolCalls >= 8, `the reference solver needed ${run.medianSolverToolCalls} tool calls`);
      const text = (await context.blobs.get(datasetBlobKey(`${prefix}ds`))).toString('utf8');
      const rows = parseQuestions(text, 'dataset');
      assert.equal(rows.length, run.accepted);
      for (const line of text.trim().split('\n')) {
        const item = JSON.parse(line) as {
          answers: string[];
          question: string;
          goldTurns: string[];
          provenance: { verdicts: { check: string; passed: boolean }[]; facts: unknown[] };
        };
        assert.deepEqual(item.provenance.verdicts.map((verdict) => [verdict.check, verdict.passed]).sort(), [
          ['contamination', true],
          ['difficulty', true],
          ['grounding', true],
          ['quality', true],
          ['solvability', true],
          ['uniqueness', true],
        ]);
        assert.ok(item.goldTurns.length >= 9 && item.goldTurns.at(-1)!.includes(`<answer>${item.answers[0]}</answer>`));
        assert.ok(!item.question.includes(item.answers[0]!));
      }
      const store = createPgSynthesisStore(corpus.pool);
      const dataset = await store.dataset(`${prefix}ds`);
      assert.equal(dataset?.status, 'published');
      assert.equal(dataset?.contentHash, run.contentHash);
      assert.equal(forcedRequests, 0, 'the gold replay asked the policy to score no forced turn');
      const accepted = (await store.candidates(`${prefix}ds`)).find((row) => row.accepted);
      const solver = (await store.verdicts([accepted!.workflowId])).find((verdict) => verdict.check === 'solvability')!;
      const [attempt] = solver.details.attempts as { trajectoryId: string }[];
      const record = JSON.parse((await context.blobs.get(`trajectories/${attempt!.trajectoryId}/record.json`)).toString('utf8')) as {
        trainable: boolean;
      };
      assert.equal(record.trainable, false, 'an unscored replay has no token ids: its record says it cannot be trained on');
    },
  );

  it('each check accepts a sound candidate and rejects a broken one, with its reason stored', { timeout: 120_000 }, async () => {
    const store = createPgSynthesisStore(corpus.pool);
    const candidates = await store.candidates(`${prefix}ds`);
    const acceptedRow = candidates.find((row) => row.accepted);
    assert.ok(acceptedRow, 'an accepted candidate to break');
    const activities = createSynthesisActivities({
      ...synthesisDependencies(corpus.pool, context.blobs),
      contamination: evaluationSetIndex([`  ${acceptedRow.question!.toUpperCase()} `]),
    });
    // Rebuild the full candidate from its stored chain.
    const chain = acceptedRow.candidate as unknown as {
      chain: SynthesisCandidate['state'];
      facts: SynthesisCandidate['facts'];
      goldTurns: string[];
    };
    const { candidate } = await activities.synthesisExit({ state: { ...chain.chain, actions: chain.chain.actions.slice(0, -1) } });
    assert.ok(candidate);
    const id = (name: string) => `${prefix}check-${name}`;

    const quality = await activities.checkQuality({ workflowId: id('quality-ok'), candidate });
    assert.equal(quality.passed, true, quality.reason);
    for (const [question, why] of [
      [`What is the capital of ${candidate.answer}?`, /appears in the question/],
      ['What is the capital of France? What is the capital of Spain?', /two questions/],
      ['capital of France', /question mark/],
    ] as const) {
      const rejected = await activities.checkQuality({
        workflowId: id(`quality-${why.source.slice(0, 8)}`),
        candidate: { ...candidate, question },
      });
      assert.equal(rejected.passed, false);
      assert.match(rejected.reason, why);
    }

    assert.equal((await activities.checkGrounding({ workflowId: id('grounding-ok'), candidate })).passed, true);
    const tampered = candidate.facts.map((fact, index) =>
      index === 1 ? { ...fact, evidence: { ...fact.evidence, start: fact.evidence.start + 1 } } : fact,
    );
    const grounding = await activities.checkGrounding({ workflowId: id('grounding-bad'), candidate: { ...candidate, facts: tampered } });
    assert.equal(grounding.passed, false);
    assert.match(grounding.reason, /sha256|span/);

    const uniqueness = await activities.checkUniqueness({ workflowId: id('unique-ok'), candidate });
    assert.equal(uniqueness.passed, true, uniqueness.reason);
    // Without its literals, the first node is one of many neighbours: more than one answer.
    const loose = { ...candidate.state, nodes: candidate.state.nodes.map((node) => ({ ...node, literals: [] })) };
    const notUnique = await activities.checkUniqueness({ workflowId: id('unique-bad'), candidate: { ...candidate, state: loose } });
    assert.equal(notUnique.passed, false);
    assert.match(notUnique.reason, /answers satisfy every constraint/);

    const contamination = await activities.checkContamination({ workflowId: id('contaminated'), candidate });
    assert.equal(contamination.passed, false);
    assert.match(contamination.reason, /overlaps test-set item q0 \(normalised-text/);
    const clean = await activities.checkContamination({
      workflowId: id('clean'),
      candidate: { ...candidate, question: 'What is the capital of Peru?' },
    });
    assert.equal(clean.passed, true);

    const verdicts = await store.verdicts([id('solvability-ok')]);
    assert.equal(verdicts.length, 0);
    const solverRecord = (await store.verdicts([acceptedRow.workflowId])).find((verdict) => verdict.check === 'solvability')!;
    const attempts = solverRecord.details.attempts as { trajectoryId: string }[];
    const recordKey = `trajectories/${attempts[0]!.trajectoryId}/record.json`;
    const solved = await activities.checkSolvability({
      workflowId: id('solvability-ok'),
      candidate,
      attempts: [
        { trajectoryId: attempts[0]!.trajectoryId, reward: 1, answer: candidate.answer, turns: candidate.goldTurns.length, recordKey },
      ],
    });
    assert.equal(solved.passed, true, solved.reason);
    const unsolved = await activities.checkSolvability({
      workflowId: id('solvability-bad'),
      candidate,
      attempts: [{ trajectoryId: attempts[0]!.trajectoryId, reward: 0, answer: 'Atlantis', turns: 3, recordKey }],
    });
    assert.equal(unsolved.passed, false);
    assert.match(unsolved.reason, /Atlantis/);

    const wrong = Array.from({ length: 16 }, () => '<answer>Atlantis</answer>');
    const hard = await activities.checkDifficulty({
      workflowId: id('hard'),
      candidate,
      samples: [...wrong.slice(1), `<answer>${candidate.answer}</answer>`],
      threshold: 0.7,
      solverPassRate: 1,
    });
    assert.equal(hard.passed, true, hard.reason); // 15 of 16 wrong: bound 0.72
    const easy = await activities.checkDifficulty({
      workflowId: id('easy'),
      candidate,
      samples: [...wrong.slice(2), `<answer>${candidate.answer}</answer>`, candidate.answer],
      threshold: 0.7,
      solverPassRate: 1,
    });
    assert.equal(easy.passed, false); // 14 of 16 wrong: bound 0.64
    assert.match(easy.reason, /14\/16/);
    const stored = await store.verdicts([id('easy'), id('grounding-bad')]);
    assert.deepEqual(stored.map((verdict) => [verdict.check, verdict.passed]).sort(), [
      ['difficulty', false],
      ['grounding', false],
    ]);
  });

  it('the Wilson bound matches the reference figures', () => {
    assert.equal(wilsonLowerBound(8, 8).toFixed(2), '0.68');
    assert.equal(wilsonLowerBound(15, 16).toFixed(2), '0.72');
    assert.equal(wilsonLowerBound(16, 16).toFixed(2), '0.81');
  });

  it('refuses bad input at once, naming the field', async () => {
    for (const [input, field] of [
      [{ datasetId: 'x', count: 0 }, /count/],
      [{ datasetId: 'x', count: 3, synthesizer: 'magic' }, /synthesizer/],
      [{ datasetId: 'x', count: 3, settings: { difficultyThreshold: 1.5 } }, /settings\.difficultyThreshold/],
      [{ datasetId: 'bad id!', count: 3 }, /datasetId/],
    ] as const) {
      await assert.rejects(
        context.client.workflow.execute(synthesisRunWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${prefix}bad-${Math.random()}`,
          args: [input],
        }),
        (error: unknown) =>
          error instanceof WorkflowFailedError && field.test(String((error.cause as Error)?.message) + JSON.stringify(error.cause)),
      );
    }
  });
});
