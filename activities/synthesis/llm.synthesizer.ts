/**
 * The LLM-driven synthesizer: the same actions as the grounded one (seed, inject, fuzz, verify, exit),
 * each a prompt to an OpenAI-compatible chat model, with retrieval from the local corpus. The model
 * writes the question; every fact it adds must quote a stored passage, which is found mechanically in
 * the stored document (document id, content hash, character span) — a claim no stored passage states
 * is rejected as ungrounded. Replies are untrusted data: a reply that is not JSON, lacks a field, is
 * cut short, leaks the answer into the question, or an endpoint that fails or hangs, is a problem with
 * its reason; an action retries a bounded number of times (settings.llmAttempts), then fails with the
 * problems as its reason. Each reply (or failure) is stored under a key of the workflow and activity
 * before it is used, so a retried activity reads it back: at most one repeated call per action after
 * a crash. Prompts are versioned; their hashes go into each action's record.
 */
import { z } from 'zod';
import { askAndParse, jsonObjectOf, type ChatMessage } from '../llm/ask.js';
import type { ChatEndpoint, ChatModels } from '../ports/chat-model.port.js';
import type { KnowledgeBaseEntity, StoredDocument } from '../ports/knowledge-base.port.js';
import type { SearchEngine } from '../ports/search.port.js';
import type {
  ChainNode,
  LlmUsage,
  SynthesisActionName,
  SynthesisCandidate,
  SynthesisFact,
  SynthesisSettings,
  SynthesisState,
} from '../../workflows/contracts/synthesis.contract.js';
import { closedBookCorrect, normaliseAnswer, qualityProblem } from './checks.js';
import { containsWord, evidenceAt, locateQuote, sha256, verifyEvidence } from './evidence.js';
import type { KnowledgeGraph } from './knowledge-graph.js';
import { Random } from './random.js';
import type { ActionOutcome, Synthesizer } from './synthesizer.js';

/** The prompts, versioned: change a text, change its version. The system message starts with `[version]`. */
export const llmPrompts = {
  seed: {
    version: 'longhaul.synth.seed/1',
    system:
      'You write quiz questions from a passage. Pick one short fact the passage states (a name, a place or a number) as the answer, ' +
      'and write one question about the passage subject whose answer it is. The question must name the subject and must not contain the answer. ' +
      'Reply with one JSON object and nothing else: {"question": "...", "answer": "...", "quote": "the exact sentence of the passage that states the answer"}',
  },
  inject: {
    version: 'longhaul.synth.inject/1',
    system:
      'You make a question harder without changing its answer. Replace the name you are given by a description of that thing taken from one of the passages, ' +
      'a description that names another entity instead (for example "France" becomes "the country that borders Belgium"), so a solver must first find it. ' +
      'Never write the answer in the question. Reply with one JSON object and nothing else: ' +
      '{"question": "the rewritten question", "document_id": "the id of the passage used", "quote": "the exact sentence of that passage that states the description", "named": "the entity the new question names instead"}',
  },
  fuzz: {
    version: 'longhaul.synth.fuzz/1',
    system:
      'You make a question harder to look up without changing its answer: obscure one exact detail of it (a number becomes a range, a year a decade, ' +
      'a name a short description). Keep it one question and never write the answer in it. Reply with one JSON object and nothing else: ' +
      '{"question": "the rewritten question", "obscured": "the exact text you removed", "replacement": "what replaced it"}',
  },
  verify: {
    version: 'longhaul.synth.verify/1',
    system:
      'Answer the question using only the passages given. Reply with one JSON object and nothing else: {"answer": "the short answer"}',
  },
  exit: {
    version: 'longhaul.synth.exit/1',
    system:
      'Rewrite the question as one fluent English question that ends with a question mark, keeping every detail and adding none. ' +
      'Reply with one JSON object and nothing else: {"question": "..."}',
  },
  guesses: {
    version: 'longhaul.synth.guesses/1',
    system:
      'Answer the question from memory, without searching. Give as many different plausible answers as asked, the most likely first. ' +
      'Reply with one JSON object and nothing else: {"answers": ["...", "..."]}',
  },
  alternatives: {
    version: 'longhaul.synth.alternatives/1',
    system:
      'You check whether a question has more than one correct answer. For each candidate answer, decide from the passages whether it also ' +
      'satisfies every condition of the question. Reply with one JSON object and nothing else: ' +
      '{"also_correct": ["each candidate that satisfies every condition"], "rationale": "one short sentence"}',
  },
} as const;
export type LlmPromptName = keyof typeof llmPrompts;

/** The hash of a prompt (its version and system text), recorded with every action that used it. */
export function llmPromptHash(name: LlmPromptName): string {
  return sha256(`${llmPrompts[name].version}\n${llmPrompts[name].system}`).slice(0, 16);
}

/** Reply length asked for, per prompt. */
const MAX_TOKENS: Record<LlmPromptName, number> = {
  seed: 256,
  inject: 384,
  fuzz: 256,
  verify: 64,
  exit: 256,
  guesses: 512,
  alternatives: 384,
};

/** A stored outcome of one call: the reply (with its tokens, from the endpoint's usage), or why there is none. */
export type LlmCallOutcome =
  | { readonly reply: string; readonly usage?: { readonly promptTokens: number; readonly completionTokens: number } }
  | { readonly error: string };

export const noLlmUsage: LlmUsage = { calls: 0, promptTokens: 0, completionTokens: 0 };

/** Two usages added. */
export function addLlmUsage(a: LlmUsage, b: LlmUsage | undefined): LlmUsage {
  return b
    ? { calls: a.calls + b.calls, promptTokens: a.promptTokens + b.promptTokens, completionTokens: a.completionTokens + b.completionTokens }
    : a;
}

export interface LlmReplyCache {
  get(key: string): Promise<LlmCallOutcome | null>;
  put(key: string, outcome: LlmCallOutcome): Promise<void>;
}

export interface LlmSynthesizerDependencies {
  graph(): Promise<KnowledgeGraph>;
  documents(ids: readonly string[]): Promise<Map<string, StoredDocument>>;
  /** The corpus search (retrieval for inject and for the alternatives' passages); absent: the knowledge base's own documents only. */
  readonly search?: SearchEngine | undefined;
  readonly models: ChatModels | undefined;
  readonly replies: LlmReplyCache;
  /** The running action's idempotency key (workflow id + activity id); null outside an activity (nothing cached). */
  callKey(): string | null;
}

/** The endpoint of a run: its settings, else the worker's configuration; a string when there is none. */
export function llmEndpoint(models: ChatModels | undefined, settings: SynthesisSettings | undefined): ChatEndpoint | string {
  const baseUrl = settings?.llmBaseUrl ?? models?.defaults.baseUrl ?? null;
  if (!models) return 'no chat models are configured on this worker';
  if (baseUrl === null) return 'no LLM endpoint: pass --llm-url (settings.llmBaseUrl) or set LONGHAUL_SYNTH_LLM_BASE_URL';
  return { baseUrl, model: settings?.llmModel ?? models.defaults.model };
}

/** A check of a reply: its value, or the problem (a short category first, details in parentheses). */
type Checked<T> = { value: T } | { problem: string };

export interface Attempted<T> {
  readonly value: T | null;
  /** One per unusable attempt, in order. */
  readonly problems: readonly string[];
  readonly prompt: string;
  /** The calls made (or read back from the reply store: a call is counted once, where it was made) and their tokens. */
  readonly usage: LlmUsage;
}

/** Quote a reply for a reason: short, one line. */
const excerpt = (text: string, length = 80) => JSON.stringify(text.replace(/\s+/g, ' ').slice(0, length));

/** The fields of a reply, or why not: not JSON, or fields missing or of the wrong type. */
export function replyFields<T extends z.ZodRawShape>(reply: string, shape: T): Checked<z.infer<z.ZodObject<T>>> {
  if (reply.trim() === '') return { problem: 'empty reply' };
  const object = jsonObjectOf(reply);
  if (!object) {
    const cut = reply.includes('{') && !reply.includes('}');
    return { problem: `${cut ? 'truncated JSON' : 'not JSON'} (${excerpt(reply)})` };
  }
  const parsed = z.object(shape).safeParse(object);
  if (!parsed.success)
    return {
      problem: `missing or invalid fields (${parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.join('.') || 'reply'}: ${issue.message}`)
        .join('; ')})`,
    };
  return { value: parsed.data };
}

/**
 * Ask the prompt up to `settings.llmAttempts` times (the first at temperature 0, the rest sampled),
 * each reply checked; the first usable value wins. Never throws for what the endpoint does.
 */
export async function askChecked<T>(
  deps: Pick<LlmSynthesizerDependencies, 'models' | 'replies' | 'callKey'>,
  settings: SynthesisSettings | undefined,
  name: LlmPromptName,
  user: string,
  seed: number,
  check: (reply: string) => Checked<T>,
): Promise<Attempted<T>> {
  const prompt = `${llmPrompts[name].version} ${llmPromptHash(name)}`;
  const endpoint = llmEndpoint(deps.models, settings);
  if (typeof endpoint === 'string') return { value: null, problems: [`no model (${endpoint})`], prompt, usage: noLlmUsage };
  const backend = deps.models!.open(endpoint);
  const messages: ChatMessage[] = [
    { role: 'system', content: `[${llmPrompts[name].version}] ${llmPrompts[name].system}` },
    { role: 'user', content: user },
  ];
  const problems: string[] = [];
  let usage = noLlmUsage;
  const key = deps.callKey();
  for (let attempt = 0; attempt < (settings?.llmAttempts ?? 2); attempt += 1) {
    const callKey = key === null ? null : `${key}/${name}-${attempt}`;
    let outcome = callKey === null ? null : await deps.replies.get(callKey);
    if (outcome === null) {
      try {
        const asked = await askAndParse(
          backend,
          messages,
          { maxNewTokens: MAX_TOKENS[name], temperature: attempt === 0 ? 0 : 0.8, seed: seed + attempt },
          (reply) => reply,
        );
        outcome = { reply: asked.reply, usage: asked.usage };
      } catch (error) {
        outcome = { error: (error as Error).message.replace(/\s+/g, ' ').slice(0, 300) };
      }
      if (callKey !== null) await deps.replies.put(callKey, outcome);
    }
    usage = addLlmUsage(usage, { calls: 1, promptTokens: 0, completionTokens: 0, ...('usage' in outcome ? outcome.usage : {}) });
    if ('error' in outcome) {
      problems.push(`endpoint failed (${outcome.error})`);
      continue;
    }
    const checked = check(outcome.reply);
    if ('value' in checked) return { value: checked.value, problems, prompt, usage };
    problems.push(checked.problem);
  }
  return { value: null, problems, prompt, usage };
}

/** "not JSON (attempt 1: …; attempt 2: …)": the first problem's category leads, so rejection reasons group. */
export function unusable(problems: readonly string[]): string {
  const category = (problems[0] ?? 'no reply').split(' (')[0]!;
  return `${category} (${problems.map((problem, index) => `attempt ${index + 1}: ${problem.replace(/[()]/g, '')}`).join('; ')})`;
}

/** `needle` as a whole word of `haystack`, case-insensitive: the haystack's own spelling of it, or null. */
export function wordIn(haystack: string, needle: string): string | null {
  const lower = haystack.toLowerCase();
  const target = needle.trim().toLowerCase();
  if (target === '') return null;
  for (let at = lower.indexOf(target); at >= 0; at = lower.indexOf(target, at + 1)) {
    const found = haystack.slice(at, at + target.length);
    if (containsWord(haystack.slice(Math.max(0, at - 1), at + target.length + 1), found)) return found;
  }
  return null;
}

const leaks = (question: string, answer: string) => wordIn(question, answer) !== null;

/** The seed entity of a task: a country with a stored document, chosen by (seed, taskIndex) in a fixed order. */
export function llmSeedEntity(graph: KnowledgeGraph, seed: number, taskIndex: number, attempt = 0): KnowledgeBaseEntity | null {
  const countries = [...(graph.byKind.get('country') ?? [])].sort();
  if (countries.length === 0) return null;
  const random = new Random(seed, taskIndex, `llm-seed-${attempt}`);
  return graph.entities.get(countries[random.below(countries.length)]!) ?? null;
}

/** The text a prompt shows of a document: its first characters. */
const passageOf = (document: StoredDocument, length = 1500) => document.text.slice(0, length);

function record(state: SynthesisState, action: SynthesisActionName, detail: string): SynthesisState {
  return { ...state, actions: [...state.actions, { action, ok: true, detail }] };
}

/** Every fact of an LLM chain: the seed's, then each node's description. */
export function llmChainFacts(state: SynthesisState): SynthesisFact[] {
  return [state.seedFact, ...state.nodes.flatMap((node) => (node.link ? [node.link.fact] : []))];
}

/** The gold solution path: from the fact nearest the named entity inwards, search its subject and read its document, then answer. */
export function llmGoldTurns(state: SynthesisState): string[] {
  const turns: string[] = [];
  for (const fact of [...llmChainFacts(state)].reverse()) {
    turns.push(`<think>I need what the documents say about ${fact.subjectName}.</think>\n<search>${fact.subjectName}</search>`);
    turns.push(`<think>I will read the document that states it.</think>\n<access>${fact.evidence.documentId}</access>`);
  }
  turns.push(`<think>The document of ${state.seedFact.subjectName} states the answer.</think>\n<answer>${state.answer}</answer>`);
  return turns;
}

export function createLlmSynthesizer(deps: LlmSynthesizerDependencies): Synthesizer {
  /** Retrieval for a name: the knowledge base's entity of that name first, then the corpus search; stored documents, up to 3. */
  async function retrieve(name: string): Promise<StoredDocument[]> {
    const graph = await deps.graph();
    const ids: string[] = [];
    for (const entity of graph.entities.values()) if (entity.name === name && !ids.includes(entity.documentId)) ids.push(entity.documentId);
    if (deps.search) {
      try {
        for (const hit of await deps.search.search(name, 5)) if (!ids.includes(hit.documentId)) ids.push(hit.documentId);
      } catch {
        /* retrieval is best effort: the knowledge base's documents remain */
      }
    }
    const stored = await deps.documents(ids.slice(0, 3));
    return ids
      .slice(0, 3)
      .map((id) => stored.get(id))
      .filter((document): document is StoredDocument => document !== undefined);
  }

  const questionOf = (state: SynthesisState) => state.question ?? '';

  return {
    name: 'llm',

    async seed({ seed, taskIndex, settings }): Promise<ActionOutcome> {
      const graph = await deps.graph();
      const entity = llmSeedEntity(graph, seed, taskIndex);
      if (!entity) return { state: null, reason: 'the knowledge base has no countries to seed from (run longhaul corpus build)' };
      const document = (await deps.documents([entity.documentId])).get(entity.documentId);
      if (!document) return { state: null, reason: `document ${entity.documentId} of ${entity.name} is not stored` };
      const asked = await askChecked(
        deps,
        settings,
        'seed',
        `Subject: ${entity.name}\nPassage (document ${document.documentId}):\n${passageOf(document, 2500)}`,
        seed,
        (reply): Checked<{ question: string; fact: SynthesisFact }> => {
          const fields = replyFields(reply, {
            question: z.string().min(1).max(1500),
            answer: z.string().min(1).max(200),
            quote: z.string().min(1).max(1000),
          });
          if ('problem' in fields) return fields;
          const { question, answer, quote } = fields.value;
          const span = locateQuote(document, quote);
          if (!span) return { problem: `ungrounded (the quote ${excerpt(quote, 60)} is not in document ${document.documentId})` };
          const evidence = evidenceAt(document, span.start, span.end);
          const stated = wordIn(evidence.text, answer);
          if (!stated) return { problem: `ungrounded (the quoted passage does not state the answer ${excerpt(answer, 40)})` };
          if (leaks(question, answer)) return { problem: `answer in the question (${excerpt(answer, 40)})` };
          if (!wordIn(question, entity.name)) return { problem: `the question does not name the subject (${entity.name})` };
          if (!question.trim().endsWith('?')) return { problem: `not a question (${excerpt(question, 60)})` };
          const fact: SynthesisFact = {
            subjectId: entity.id,
            subjectName: entity.name,
            predicate: 'llm:answer',
            objectId: null,
            objectText: stated,
            documentId: document.documentId,
            evidence,
          };
          return { value: { question: question.trim(), fact } };
        },
      );
      if (!asked.value) return { state: null, reason: `seed: ${unusable(asked.problems)}`, llmUsage: asked.usage };
      const state: SynthesisState = {
        synthesizer: 'llm',
        seedFact: asked.value.fact,
        answer: asked.value.fact.objectText,
        nodes: [{ entityId: entity.id, kind: entity.kind, name: entity.name, literals: [] }],
        injections: 0,
        fuzzes: 0,
        actions: [],
        question: asked.value.question,
      };
      return {
        state: record(
          state,
          'seed',
          `${entity.name} → ${state.answer} (${asked.prompt}${asked.problems.length ? `, after ${asked.problems.length} unusable` : ''})`,
        ),
        reason: 'seeded',
        llmUsage: asked.usage,
      };
    },

    async inject(state, { seed, round, settings }): Promise<ActionOutcome> {
      const last = state.nodes.at(-1)!;
      const passages = await retrieve(last.name);
      if (passages.length === 0) return { state: null, reason: `inject: nothing in the corpus about ${last.name}` };
      const question = questionOf(state);
      const asked = await askChecked(
        deps,
        settings,
        'inject',
        [
          `Question: ${question}`,
          `Its answer (must stay the answer; never write it in the question): ${state.answer}`,
          `Name to replace: ${last.name}`,
          'Passages:',
          ...passages.map((document) => `[${document.documentId}] ${document.title}: ${passageOf(document)}`),
        ].join('\n'),
        seed + 1000 * (round + 1),
        (reply): Checked<{ question: string; node: ChainNode; fact: SynthesisFact }> => {
          const fields = replyFields(reply, {
            question: z.string().min(1).max(1500),
            document_id: z.string().min(1).max(300),
            quote: z.string().min(1).max(1000),
            named: z.string().min(1).max(200),
          });
          if ('problem' in fields) return fields;
          const { question: rewritten, document_id: documentId, quote, named } = fields.value;
          const document = passages.find((passage) => passage.documentId === documentId);
          if (!document) return { problem: `ungrounded (document ${excerpt(documentId, 60)} is not one of the passages given)` };
          const span = locateQuote(document, quote);
          if (!span) return { problem: `ungrounded (the quote ${excerpt(quote, 60)} is not in document ${documentId})` };
          const evidence = evidenceAt(document, span.start, span.end);
          const stated = wordIn(evidence.text, named);
          if (!stated) return { problem: `ungrounded (the quoted passage does not state ${excerpt(named, 40)})` };
          if (!wordIn(evidence.text, last.name) && !wordIn(document.title, last.name))
            return { problem: `ungrounded (the quoted passage is not about ${last.name})` };
          if (normaliseAnswer(named) === normaliseAnswer(state.answer)) return { problem: 'names the answer' };
          if (leaks(rewritten, state.answer)) return { problem: `answer in the question (${excerpt(state.answer, 40)})` };
          if (wordIn(rewritten, last.name)) return { problem: `still names ${last.name}` };
          if (!wordIn(rewritten, named)) return { problem: `the question does not name ${named}` };
          if (!rewritten.trim().endsWith('?')) return { problem: `not a question (${excerpt(rewritten, 60)})` };
          const fact: SynthesisFact = {
            subjectId: last.entityId,
            subjectName: last.name,
            predicate: 'llm:description',
            objectId: null,
            objectText: stated,
            documentId: document.documentId,
            evidence,
          };
          return {
            value: {
              question: rewritten.trim(),
              fact,
              node: { entityId: `mention:${stated}`, kind: 'mention', name: stated, literals: [] },
            },
          };
        },
      );
      if (!asked.value) return { state: null, reason: unusable(asked.problems), llmUsage: asked.usage };
      const nodes = [...state.nodes.slice(0, -1), { ...last, link: { fact: asked.value.fact, forward: true } }, asked.value.node];
      return {
        state: record(
          { ...state, nodes, injections: state.injections + 1, question: asked.value.question },
          'inject',
          `${last.name} described through ${asked.value.node.name} (${asked.prompt})`,
        ),
        reason: 'injected',
        llmUsage: asked.usage,
      };
    },

    async fuzz(state, { seed, round, settings }): Promise<ActionOutcome> {
      const question = questionOf(state);
      const asked = await askChecked(
        deps,
        settings,
        'fuzz',
        `Question: ${question}\nIts answer (must stay the answer; never write it in the question): ${state.answer}`,
        seed + 1000 * (round + 1),
        (reply): Checked<{ question: string; obscured: string; replacement: string }> => {
          const fields = replyFields(reply, {
            question: z.string().min(1).max(1500),
            obscured: z.string().min(1).max(300),
            replacement: z.string().max(300),
          });
          if ('problem' in fields) return fields;
          const { question: rewritten, obscured } = fields.value;
          if (!wordIn(question, obscured)) return { problem: `obscured text not in the question (${excerpt(obscured, 40)})` };
          if (wordIn(rewritten, obscured)) return { problem: `obscured text still in the question (${excerpt(obscured, 40)})` };
          if (leaks(rewritten, state.answer)) return { problem: `answer in the question (${excerpt(state.answer, 40)})` };
          if (!rewritten.trim().endsWith('?')) return { problem: `not a question (${excerpt(rewritten, 60)})` };
          return { value: { ...fields.value, question: rewritten.trim() } };
        },
      );
      if (!asked.value) return { state: null, reason: unusable(asked.problems), llmUsage: asked.usage };
      return {
        state: record(
          { ...state, fuzzes: state.fuzzes + 1, question: asked.value.question },
          'fuzz',
          `${asked.value.obscured} → ${asked.value.replacement} (${asked.prompt})`,
        ),
        reason: 'fuzzed',
        llmUsage: asked.usage,
      };
    },

    async verify(state, settings) {
      const question = questionOf(state);
      if (leaks(question, state.answer)) return { ok: false, reason: 'the question contains the answer' };
      const facts = llmChainFacts(state);
      const stored = await deps.documents([...new Set(facts.map((fact) => fact.evidence.documentId))]);
      for (const fact of facts) {
        const problem = verifyEvidence(fact.evidence, fact, stored.get(fact.evidence.documentId));
        if (problem) return { ok: false, reason: `ungrounded fact: ${problem}` };
      }
      const asked = await askChecked(
        deps,
        settings,
        'verify',
        [`Question: ${question}`, 'Passages:', ...facts.map((fact) => `[${fact.evidence.documentId}] ${fact.evidence.text}`)].join('\n'),
        state.actions.length,
        (reply): Checked<string> => {
          const fields = replyFields(reply, { answer: z.string().max(300) });
          if ('problem' in fields) return fields;
          return closedBookCorrect(fields.value.answer, state.answer)
            ? { value: fields.value.answer }
            : { problem: `answered ${excerpt(fields.value.answer, 40)} from the evidence, not ${excerpt(state.answer, 40)}` };
        },
      );
      if (asked.value === null) return { ok: false, reason: unusable(asked.problems), llmUsage: asked.usage };
      return { ok: true, reason: `the evidence answers it (${asked.prompt})`, llmUsage: asked.usage };
    },

    async exit(state, settings) {
      const asked = await askChecked(
        deps,
        settings,
        'exit',
        `Question: ${questionOf(state)}\nIts answer (never write it in the question): ${state.answer}`,
        state.actions.length,
        (reply): Checked<string> => {
          const fields = replyFields(reply, { question: z.string().min(1).max(1500) });
          if ('problem' in fields) return fields;
          const problem = qualityProblem(fields.value.question, state.answer);
          return problem ? { problem: `${problem} (${excerpt(fields.value.question, 60)})` } : { value: fields.value.question.trim() };
        },
      );
      if (asked.value === null) return { candidate: null, reason: `exit: ${unusable(asked.problems)}`, llmUsage: asked.usage };
      const turns = llmGoldTurns(state);
      const finished: SynthesisState = {
        ...state,
        question: asked.value,
        actions: [...state.actions, { action: 'exit', ok: true, detail: `${state.nodes.length - 1} hops (${asked.prompt})` }],
      };
      const candidate: SynthesisCandidate = {
        question: asked.value,
        answer: state.answer,
        state: finished,
        facts: llmChainFacts(state),
        hops: state.nodes.length - 1,
        goldTurns: turns,
        goldToolCalls: turns.length - 1,
      };
      return { candidate, reason: 'exited', llmUsage: asked.usage };
    },
  };
}
