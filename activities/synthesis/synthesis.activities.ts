/**
 * The synthesis activities (agent queue): the synthesizer's actions, the validation checks (each
 * stores its verdict and reason before it returns), the candidate record and the dataset's
 * publication. Idempotent: a retried action computes the same result (the synthesizer is
 * deterministic), a retried verdict overwrites itself, a candidate is written once, and a
 * published dataset is never changed.
 */
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import type { BlobStore } from '../ports/blob-store.port.js';
import type { ChatModels } from '../ports/chat-model.port.js';
import type { SearchEngine } from '../ports/search.port.js';
import type { ContaminationCheck } from '../ports/contamination.port.js';
import type { KnowledgeBaseReader, StoredDocument } from '../ports/knowledge-base.port.js';
import type { SynthesisStore } from '../ports/synthesis-store.port.js';
import { toApplicationFailure } from '../../workflows/contracts/application-failure.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import type {
  CheckInput,
  CheckVerdict,
  EvidenceOnlyPrompt,
  LlmUsage,
  SynthesisActivities,
  SynthesisCheck,
  SynthesisRunResult,
  SynthesisState,
} from '../../workflows/contracts/synthesis.contract.js';
import { closedBookCorrect, extractAnswer, normaliseAnswer, qualityProblem, wilsonLowerBound } from './checks.js';
import { verifyEvidence } from './evidence.js';
import { createGroundedSynthesizer } from './grounded.synthesizer.js';
import { KnowledgeGraph } from './knowledge-graph.js';
import {
  addLlmUsage,
  askChecked,
  createLlmSynthesizer,
  replyFields,
  unusable,
  type LlmCallOutcome,
  type LlmReplyCache,
} from './llm.synthesizer.js';
import { Random } from './random.js';
import { datasetStatistics } from './statistics.js';
import type { Synthesizer } from './synthesizer.js';

/** What the contamination check needs of an index of evaluation sets (activities/question-sets' ContaminationIndex). */
export type ContaminationLookup = ContaminationCheck & { describe?(): { questions: number; sets: Record<string, number> } };

export interface SynthesisDependencies {
  readonly knowledgeBase: KnowledgeBaseReader;
  readonly store: SynthesisStore;
  readonly blobs: BlobStore;
  /** Opens the index of evaluation sets a question must not overlap (once, on first use); without one the contamination check fails every candidate, naming the fix. */
  readonly contamination?: (() => Promise<ContaminationLookup>) | undefined;
  /** How long an indexed knowledge base is trusted before its version is checked again. @default 30 s */
  readonly graphTtlMs?: number;
  /** The corpus search the LLM synthesizer retrieves passages with. */
  readonly search?: SearchEngine | undefined;
  /** The chat models of the LLM synthesizer (absent: its actions fail, naming the missing configuration). */
  readonly models?: ChatModels | undefined;
}

/** Where the LLM path keeps each reply before using it (idempotency: a retried activity reads it back). */
export const llmReplyKey = (key: string) => `synthesis/llm-replies/${key}.json`;

/** The running activity's key (workflow id + activity id), or null outside an activity. */
function activityCallKey(): string | null {
  try {
    const { workflowExecution, activityId } = Context.current().info;
    return workflowExecution ? `${workflowExecution.workflowId}/${activityId}` : null;
  } catch {
    return null;
  }
}

const callOutcomeSchema = z.union([
  z.object({
    reply: z.string(),
    usage: z.object({ promptTokens: z.number().int().min(0), completionTokens: z.number().int().min(0) }).optional(),
  }),
  z.object({ error: z.string() }),
]);

/**
 * The evidence-only prompt's instruction (versioned like the LLM prompts: change the text, change the
 * version). The policy answers as in the closed-book check, inside <answer></answer>.
 */
export const evidenceOnlyPromptVersion = 'longhaul.synth.evidence-only/1';
const EVIDENCE_ONLY_SYSTEM =
  'Answer the question using only the numbered passages given, without searching. Some passages are irrelevant. ' +
  'Reply with only the answer inside <answer></answer>.';
/** Characters of a distractor passage shown (a gold passage is its whole evidence span). */
const DISTRACTOR_CHARACTERS = 400;

const KINDS = ['country', 'city'] as const;

/** The blob key of a published dataset. */
export const datasetBlobKey = (datasetId: string) => `synthesis/${datasetId}/dataset.jsonl`;

const recordSchema = z.object({
  turnRecords: z.array(
    z.object({ tools: z.array(z.object({ tool: z.string(), ok: z.boolean(), documentIds: z.array(z.string()) })).default([]) }),
  ),
});

export function createSynthesisActivities(deps: SynthesisDependencies): SynthesisActivities {
  let cached: { graph: Promise<KnowledgeGraph>; checkedAt: number; version: string | null } | undefined;
  const ttl = deps.graphTtlMs ?? 30_000;
  async function graph(): Promise<KnowledgeGraph> {
    if (cached && Date.now() - cached.checkedAt < ttl) return cached.graph;
    if (cached) {
      const version = await deps.knowledgeBase.version(KINDS);
      const current = await cached.graph.catch(() => null);
      cached.checkedAt = Date.now();
      if (current && current.snapshot.version === version) return cached.graph;
    }
    const loading = deps.knowledgeBase.snapshot(KINDS).then((snapshot) => new KnowledgeGraph(snapshot));
    cached = { graph: loading, checkedAt: Date.now(), version: null };
    loading.catch(() => {
      cached = undefined;
    });
    return loading;
  }
  const documentCache = new Map<string, StoredDocument>();
  async function documents(ids: readonly string[]): Promise<Map<string, StoredDocument>> {
    const missing = ids.filter((id) => !documentCache.has(id));
    if (missing.length) for (const [id, document] of await deps.knowledgeBase.documents(missing)) documentCache.set(id, document);
    if (documentCache.size > 50_000) documentCache.clear();
    return new Map(ids.filter((id) => documentCache.has(id)).map((id) => [id, documentCache.get(id)!]));
  }
  let contaminationIndex: Promise<ContaminationLookup> | undefined;
  const replies: LlmReplyCache = {
    async get(key) {
      if (!(await deps.blobs.exists(llmReplyKey(key)))) return null;
      const parsed = callOutcomeSchema.safeParse(JSON.parse((await deps.blobs.get(llmReplyKey(key))).toString('utf8')));
      return parsed.success ? (parsed.data as LlmCallOutcome) : null;
    },
    put: (key, outcome) => deps.blobs.put(llmReplyKey(key), JSON.stringify(outcome), 'application/json'),
  };
  const llm = { graph, documents, search: deps.search, models: deps.models, replies, callKey: activityCallKey };
  const synthesizers: Record<string, Synthesizer> = {
    grounded: createGroundedSynthesizer({ graph, documents }),
    llm: createLlmSynthesizer(llm),
  };
  const synthesizerOf = (state: SynthesisState | { synthesizer: string }) => {
    const synthesizer = synthesizers[state.synthesizer];
    if (!synthesizer)
      throw toApplicationFailure(
        new LonghaulError(errorTypes.invalidInput, `unknown synthesizer "${state.synthesizer}"`, { field: 'synthesizer' }),
      );
    return synthesizer;
  };

  async function verdict(
    input: CheckInput,
    check: SynthesisCheck,
    passed: boolean,
    reason: string,
    details: Record<string, unknown> = {},
    llmUsage?: LlmUsage,
  ) {
    const stored = llmUsage ? { ...details, llmUsage } : details;
    await deps.store.recordVerdict({ workflowId: input.workflowId, check, passed, reason, details: stored });
    return { check, passed, reason, details: stored, ...(llmUsage ? { llmUsage } : {}) } satisfies CheckVerdict;
  }

  /**
   * The LLM path's uniqueness: at least `alternativeAnswers` distinct wrong answers, gathered from the
   * closed-book samples of the policy, the tool-using solver's runs and the synthesizer model's own
   * closed-book guesses, are put to the model with the candidate's evidence and a retrieved passage
   * for each; the candidate stays when none of them fits every condition. The verdict keeps every
   * answer considered, with where it came from.
   */
  async function alternativeAnswerCheck(input: Parameters<SynthesisActivities['checkUniqueness']>[0]): Promise<CheckVerdict> {
    const { candidate, settings } = input;
    const needed = settings?.alternativeAnswers ?? 20;
    const considered = new Map<string, { answer: string; sources: Set<string> }>();
    const add = (answer: string | null | undefined, source: string) => {
      const text = (answer ?? '').replace(/\s+/g, ' ').trim().slice(0, 120);
      const key = normaliseAnswer(text);
      if (key === '' || closedBookCorrect(text, candidate.answer)) return;
      const entry = considered.get(key) ?? { answer: text, sources: new Set<string>() };
      entry.sources.add(source);
      considered.set(key, entry);
    };
    for (const sample of input.samples ?? []) add(extractAnswer(sample), 'closed-book policy');
    for (const attempt of input.attempts ?? []) add(attempt.answer, 'tool-using solver');
    const guesses = await askChecked(
      llm,
      settings,
      'guesses',
      `Question: ${candidate.question}\nAnswers wanted: ${needed + 5}`,
      candidate.question.length,
      (reply) => replyFields(reply, { answers: z.array(z.string().max(200)).min(1).max(200) }),
    );
    for (const guess of guesses.value?.answers ?? []) add(guess, 'closed-book synthesizer model');
    const wrongAnswers = [...considered.values()].map((entry) => ({ answer: entry.answer, sources: [...entry.sources].sort() }));
    const details = { method: 'alternative answers', needed, wrongAnswers, guessProblems: guesses.problems, gold: candidate.answer };
    if (wrongAnswers.length < needed)
      return verdict(
        input,
        'uniqueness',
        false,
        `only ${wrongAnswers.length} distinct wrong answers gathered (at least ${needed} needed)`,
        details,
        guesses.usage,
      );
    const passages = candidate.facts.map((fact) => `[${fact.evidence.documentId}] ${fact.evidence.text}`);
    if (deps.search)
      for (const { answer } of wrongAnswers) {
        const hit = (await deps.search.search(answer, 1).catch(() => []))[0];
        if (hit) passages.push(`[${hit.documentId}] ${hit.title}: ${hit.text.replace(/\s+/g, ' ').slice(0, 200)}`);
      }
    const judged = await askChecked(
      llm,
      settings,
      'alternatives',
      [
        `Question: ${candidate.question}`,
        `Known answer: ${candidate.answer}`,
        'Candidates:',
        ...wrongAnswers.map((entry) => `- ${entry.answer}`),
        'Passages:',
        ...passages,
      ].join('\n'),
      candidate.question.length + 1,
      (reply) => {
        const fields = replyFields(reply, {
          also_correct: z.array(z.string().max(200)).max(200),
          rationale: z.string().max(2000).optional(),
        });
        if ('problem' in fields) return fields;
        // Only the candidates count: the known answer, or names the model made up, are not alternatives.
        const fitting = fields.value.also_correct.filter((name) => considered.has(normaliseAnswer(name)));
        return { value: { fitting, rationale: fields.value.rationale ?? '' } };
      },
    );
    const usage = addLlmUsage(guesses.usage, judged.usage);
    if (!judged.value)
      return verdict(
        input,
        'uniqueness',
        false,
        `alternative-answer check: ${unusable(judged.problems)}`,
        { ...details, prompt: judged.prompt },
        usage,
      );
    const { fitting, rationale } = judged.value;
    return verdict(
      input,
      'uniqueness',
      fitting.length === 0,
      fitting.length === 0
        ? `none of ${wrongAnswers.length} distinct wrong answers (closed-book, tool-using, model guesses) fits every condition`
        : `${fitting.length} other answers fit every condition: ${fitting.slice(0, 5).join(', ')}`,
      { ...details, alsoCorrect: fitting, rationale, prompt: judged.prompt, passages: passages.length },
      usage,
    );
  }

  return {
    async synthesisBegin({ datasetId, synthesizer, seed, settings }) {
      await deps.store.beginDataset({ datasetId, synthesizer, seed, settings: { ...settings } });
    },
    synthesisSeed: ({ synthesizer, seed, taskIndex, settings }) => synthesizerOf({ synthesizer }).seed({ seed, taskIndex, settings }),
    synthesisInject: ({ state, seed, round, final, settings }) => synthesizerOf(state).inject(state, { seed, round, final, settings }),
    synthesisFuzz: ({ state, seed, round, settings }) => synthesizerOf(state).fuzz(state, { seed, round, settings }),
    synthesisVerify: ({ state, settings }) => synthesizerOf(state).verify(state, settings),
    synthesisExit: ({ state, settings }) => synthesizerOf(state).exit(state, settings),

    async checkQuality(input) {
      const problem = qualityProblem(input.candidate.question, input.candidate.answer);
      return verdict(input, 'quality', problem === null, problem ?? 'well formed, one question, answer not in it');
    },

    async checkGrounding(input) {
      const { facts } = input.candidate;
      const stored = await deps.knowledgeBase.documents([...new Set(facts.map((fact) => fact.evidence.documentId))]);
      const kb = await graph();
      const problems: string[] = [];
      for (const fact of facts) {
        const problem = verifyEvidence(fact.evidence, fact, stored.get(fact.evidence.documentId));
        if (problem) problems.push(`${fact.subjectId} ${fact.predicate}: ${problem}`);
        // The LLM path's facts are passages the model quoted, not knowledge-base relations: the span is the whole proof.
        else if (
          input.candidate.state.synthesizer === 'grounded' &&
          !kb.relations(fact.subjectId, fact.predicate).some((relation) => relation.objectText === fact.objectText)
        )
          problems.push(`${fact.subjectId} ${fact.predicate} ${fact.objectText}: no longer in the knowledge base`);
      }
      return verdict(
        input,
        'grounding',
        problems.length === 0 && facts.length > 0,
        problems.length ? problems[0]! : facts.length ? `${facts.length} spans re-verified (content hash + span sha256)` : 'no facts',
        { facts: facts.length, problems },
      );
    },

    async checkUniqueness(input) {
      const { state } = input.candidate;
      if (state.synthesizer === 'llm') return alternativeAnswerCheck(input);
      if (state.synthesizer !== 'grounded')
        return verdict(input, 'uniqueness', false, `no uniqueness proof for synthesizer ${state.synthesizer}`);
      const kb = await graph();
      const { answers, sizes } = kb.answers(state.nodes, state.seedFact.predicate);
      const passed = answers.size === 1 && answers.has(input.candidate.answer);
      return verdict(
        input,
        'uniqueness',
        passed,
        passed
          ? `exactly one answer over the whole knowledge base (entities per node ${sizes.join('/')})`
          : `${answers.size} answers satisfy every constraint: ${[...answers].slice(0, 5).join(', ')}`,
        { answers: [...answers].slice(0, 20), entitiesPerNode: sizes, knowledgeBaseVersion: kb.snapshot.version },
      );
    },

    async checkContamination(input) {
      if (!deps.contamination)
        return verdict(input, 'contamination', false, 'no evaluation sets indexed (the contamination index is not configured)');
      contaminationIndex ??= deps.contamination();
      let index: ContaminationLookup;
      try {
        index = await contaminationIndex;
      } catch (error) {
        contaminationIndex = undefined;
        // Unchecked is not clean: the candidate is rejected, with the reason (e.g. LONGHAUL_DATA_ROOT missing).
        return verdict(input, 'contamination', false, `evaluation sets could not be loaded: ${(error as Error).message.slice(0, 300)}`);
      }
      const result = index.check(input.candidate.question);
      const indexed = index.describe?.();
      const details = {
        set: result.set ?? null,
        itemId: result.itemId ?? null,
        evaluationQuestion: result.question ?? null,
        overlap: result.overlap ?? null,
        indexedQuestions: indexed?.questions ?? null,
        indexedSets: indexed ? Object.keys(indexed.sets).length : null,
      };
      return verdict(
        input,
        'contamination',
        !result.contaminated,
        result.contaminated
          ? `overlaps ${result.set ?? 'an evaluation set'} item ${result.itemId ?? '?'} (${result.reason ?? 'match'}, overlap ${result.overlap ?? 1})`
          : `no overlap with ${indexed ? `${indexed.questions} questions of ${Object.keys(indexed.sets).length} evaluation sets` : 'the evaluation sets'} (normalised text, word n-grams)`,
        details,
      );
    },

    async checkSolvability(input) {
      const needed = [...new Set(input.candidate.facts.map((fact) => fact.evidence.documentId))];
      const outcomes: { trajectoryId: string; passed: boolean; toolCalls: number; why: string; unreadEvidence?: string[] }[] = [];
      for (const attempt of input.attempts) {
        const parsed = recordSchema.safeParse(JSON.parse((await deps.blobs.get(attempt.recordKey)).toString('utf8')));
        if (!parsed.success) {
          outcomes.push({ trajectoryId: attempt.trajectoryId, passed: false, toolCalls: 0, why: 'unreadable trajectory record' });
          continue;
        }
        const tools = parsed.data.turnRecords.flatMap((turn) => turn.tools);
        const read = new Set(tools.filter((tool) => tool.ok).flatMap((tool) => tool.documentIds));
        const unread = needed.filter((id) => !read.has(id));
        // A gold replay must read every evidence document; a policy solver only has to answer right (what it read is recorded).
        const passed = attempt.reward >= 1 && (input.mode === 'policy' || unread.length === 0);
        outcomes.push({
          trajectoryId: attempt.trajectoryId,
          passed,
          toolCalls: tools.length,
          why:
            attempt.reward < 1
              ? `reward ${attempt.reward} (answer ${JSON.stringify(attempt.answer)})`
              : unread.length && input.mode !== 'policy'
                ? `never read ${unread.join(', ')}`
                : 'solved',
          unreadEvidence: unread,
        });
      }
      const solved = outcomes.filter((outcome) => outcome.passed);
      return verdict(
        input,
        'solvability',
        solved.length > 0,
        solved.length > 0
          ? `solved by ${solved.length} of ${outcomes.length} tool-using runs (${input.mode === 'policy' ? "the reference policy's own tool use" : 'gold path replayed'}) through the real search and access tools`
          : `no tool-using run solved it: ${outcomes.map((outcome) => outcome.why).join('; ')}`,
        {
          attempts: outcomes,
          mode: input.mode ?? 'gold',
          passAtK: solved.length > 0 ? 1 : 0,
          passRate: outcomes.length ? solved.length / outcomes.length : 0,
          solverToolCalls: solved[0]?.toolCalls ?? outcomes[0]?.toolCalls ?? 0,
        },
      );
    },

    async checkDifficulty(input) {
      const n = input.samples.length;
      const wrong = input.samples.filter((sample) => !closedBookCorrect(sample, input.candidate.answer)).length;
      const bound = wilsonLowerBound(wrong, n);
      const passed = n > 0 && bound > input.threshold;
      return verdict(
        input,
        'difficulty',
        passed,
        `closed-book error ${wrong}/${n}, Wilson 95 % lower bound ${bound.toFixed(3)} ${passed ? '>' : '≤'} ${input.threshold}`,
        { samples: n, wrong, errorLowerBound: Number(bound.toFixed(4)), threshold: input.threshold, solverPassRate: input.solverPassRate },
      );
    },

    async evidenceOnlyPrompt({ candidate, distractors, seed }): Promise<EvidenceOnlyPrompt> {
      const goldIds = new Set(candidate.facts.map((fact) => fact.evidence.documentId));
      const stored = await documents([...goldIds]);
      const gold = new Map<string, { documentId: string; gold: boolean; title: string; text: string }>();
      for (const fact of candidate.facts) {
        const key = `${fact.evidence.documentId}\u0000${fact.evidence.start}`;
        if (!gold.has(key))
          gold.set(key, {
            documentId: fact.evidence.documentId,
            gold: true,
            title: stored.get(fact.evidence.documentId)?.title ?? fact.subjectName,
            text: fact.evidence.text,
          });
      }
      const others: { documentId: string; gold: boolean; title: string; text: string }[] = [];
      if (deps.search && distractors > 0) {
        // Distractors: what a search for the question finds that is not a gold document (best effort: a failed search leaves none).
        const hits = await deps.search.search(candidate.question, distractors + goldIds.size + 4).catch(() => []);
        for (const hit of hits) {
          if (others.length >= distractors) break;
          if (goldIds.has(hit.documentId) || others.some((other) => other.documentId === hit.documentId)) continue;
          others.push({
            documentId: hit.documentId,
            gold: false,
            title: hit.title,
            text: hit.text.replace(/\s+/g, ' ').slice(0, DISTRACTOR_CHARACTERS),
          });
        }
      }
      const passages = new Random(seed, 0, 'evidence-only').shuffle([...gold.values(), ...others]);
      return {
        messages: [
          { role: 'system', content: `[${evidenceOnlyPromptVersion}] ${EVIDENCE_ONLY_SYSTEM}` },
          {
            role: 'user',
            content: [
              ...passages.map((passage, index) => `Passage ${index + 1} (${passage.title}): ${passage.text.replace(/\s+/g, ' ')}`),
              `Question: ${candidate.question}`,
            ].join('\n'),
          },
        ],
        passages: passages.map(({ documentId, gold: isGold }) => ({ documentId, gold: isGold })),
      };
    },

    async checkEvidenceOnly(input) {
      const answer = extractAnswer(input.reply).slice(0, 300);
      const passed = closedBookCorrect(input.reply, input.candidate.answer);
      const goldCount = input.prompt.passages.filter((passage) => passage.gold).length;
      return verdict(
        input,
        'evidence',
        passed,
        `${passed ? 'answered' : 'did not answer'} from ${goldCount} gold and ${input.prompt.passages.length - goldCount} distractor passages without tools: ${JSON.stringify(answer.slice(0, 80))}${input.gate ? '' : ' (recorded, not gating)'}`,
        {
          answer,
          reply: input.reply.slice(0, 500),
          gold: input.candidate.answer,
          passages: input.prompt.passages,
          gate: input.gate,
          prompt: evidenceOnlyPromptVersion,
          tokens: input.tokens,
        },
      );
    },

    async recordCandidate(input) {
      const { candidate, state } = input;
      await deps.store.recordCandidate({
        datasetId: input.datasetId,
        taskIndex: input.taskIndex,
        workflowId: input.workflowId,
        accepted: input.accepted,
        reason: input.reason,
        question: candidate?.question ?? null,
        answer: candidate?.answer ?? null,
        candidate: {
          injections: (candidate?.state ?? state)?.injections ?? 0,
          fuzzes: (candidate?.state ?? state)?.fuzzes ?? 0,
          hops: candidate?.hops ?? Math.max(0, (state?.nodes.length ?? 1) - 1),
          chain: candidate?.state ?? state,
          facts: candidate?.facts ?? [],
          goldTurns: candidate?.goldTurns ?? [],
          ...(input.llmUsage ? { llmUsage: input.llmUsage } : {}),
        },
        seconds: input.seconds,
        tokens: input.tokens,
      });
    },

    async publishDataset({ datasetId, count }): Promise<SynthesisRunResult> {
      const dataset = await deps.store.dataset(datasetId);
      if (!dataset)
        throw toApplicationFailure(new LonghaulError(errorTypes.notFound, `dataset ${datasetId} was never begun`, { field: 'datasetId' }));
      const candidates = await deps.store.candidates(datasetId);
      const present = new Set(candidates.map((row) => row.taskIndex));
      const missing = [...Array(count).keys()].filter((index) => !present.has(index));
      if (missing.length)
        throw toApplicationFailure(
          new LonghaulError(errorTypes.corrupt, `dataset ${datasetId} lacks tasks ${missing.slice(0, 10).join(', ')} of ${count}`, {
            field: 'count',
          }),
        );
      const verdicts = await deps.store.verdicts(candidates.map((row) => row.workflowId));
      const statistics = datasetStatistics(candidates, verdicts);
      const verdictsOf = (workflowId: string) =>
        verdicts
          .filter((verdict) => verdict.workflowId === workflowId)
          .map((verdict) => ({ check: verdict.check, passed: verdict.passed, reason: verdict.reason, details: verdict.details }));
      const accepted = candidates.filter((row) => row.accepted).sort((a, b) => a.taskIndex - b.taskIndex);
      const lines = accepted.map((row) =>
        JSON.stringify({
          id: `${datasetId}:${row.taskIndex}`,
          question: row.question,
          answers: [row.answer],
          goldTurns: row.candidate.goldTurns,
          source: `longhaul-${dataset.synthesizer}`,
          provenance: {
            datasetId,
            taskIndex: row.taskIndex,
            workflowId: row.workflowId,
            ...row.candidate,
            verdicts: verdictsOf(row.workflowId),
          },
        }),
      );
      // The content hash covers what the run decided, not its ids or timings: two runs with the same seed hash alike.
      const contentHash = createHash('sha256')
        .update(
          JSON.stringify(
            candidates
              .sort((a, b) => a.taskIndex - b.taskIndex)
              .map((row) => [
                row.taskIndex,
                row.accepted,
                row.reason,
                row.question,
                row.answer,
                row.candidate.facts,
                row.candidate.goldTurns,
              ]),
          ),
        )
        .digest('hex');
      const blobKey = datasetBlobKey(datasetId);
      if (dataset.status === 'published') {
        if (dataset.contentHash !== contentHash)
          throw toApplicationFailure(
            new LonghaulError(
              errorTypes.corrupt,
              `dataset ${datasetId} is published with content ${dataset.contentHash}; it cannot change`,
              {
                field: 'datasetId',
              },
            ),
          );
      } else {
        await deps.blobs.put(blobKey, lines.join('\n') + (lines.length ? '\n' : ''), 'application/x-ndjson');
        await deps.store.publish(datasetId, { blobKey, contentHash, items: accepted.length, statistics: { ...statistics } });
      }
      const wallSeconds = 0;
      return { datasetId, blobKey, contentHash, wallSeconds, ...statistics };
    },
  };
}
