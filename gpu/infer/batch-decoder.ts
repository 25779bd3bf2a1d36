/**
 * Continuous batching on one OnnxModel: every active sequence advances in one session run per
 * decode step, so the 135 M weights are read once per step for the whole batch instead of once per
 * sequence. Sequences join and leave between steps. The batch's key/value cache is one padded
 * tensor per layer ([rows, kvHeads, capacity, headDim]) with a per-row mask of the columns that hold
 * real tokens. Where the graph outputs the new positions' keys and values (`model.keepsOwnCache`), the
 * cache is a buffer with spare columns that each run's new columns are written into in place (the
 * unused columns masked out), and the whole cache never comes back from onnxruntime; otherwise the
 * grown cache onnxruntime returns is fed back as it is. When the membership changes, the cache is
 * rebuilt once, each row's real columns copied right-aligned (left padding) and columns no row uses
 * dropped.
 *
 * Prompts are prefilled in chunks (`prefillChunkTokens` per sequence and run), several prompts in
 * one run, and prefill runs alternate with decode steps so a long prompt does not stall the tokens
 * of the sequences already decoding. A prompt that needs logits for more than its last position (a
 * scored forced text, recomputed prefix logprobs) is prefilled on its own.
 *
 * A run that fails rejects the sequences in that run only; the others go on.
 *
 * Prefix cache: a released sequence leaves its keys and values behind (compacted, keyed by its token
 * ids, least recently used first out past `prefixCacheBytes`), and a prompt that starts with the tokens
 * of one (the next turn of the same trajectory: its transcript so far plus the tool results; or a
 * sibling sample of the same question) is prefilled from where they part instead of from its start.
 * The decoder belongs to one set of weights (a new policy version gets a new decoder), so an entry is
 * never reused across versions.
 */
import type { OnnxModel } from './onnx-model.js';

/** The caller's signal aborted while its prompt waited for, or was in, the prefill. */
export class PrefillAbortedError extends Error {
  constructor() {
    super('prefill aborted by the caller');
    this.name = 'PrefillAbortedError';
  }
}

export interface BatchDecoderOptions {
  readonly model: OnnxModel;
  /** Most sequences in one decode run; more wait for a free row. @default 32 */
  readonly maxBatchSize?: number;
  /** Prompt tokens per sequence and prefill run. @default 128 */
  readonly prefillChunkTokens?: number;
  /** Most prompts prefilled in one run. @default 8 */
  readonly maxPrefillRows?: number;
  /** Hears every session run (benchmarks: step times, batch sizes). */
  readonly onRun?: (run: RunReport) => void;
  /** Bytes of released sequences' keys and values kept for reuse by prompts that extend them (0: none). @default 0 */
  readonly prefixCacheBytes?: number;
  /**
   * Keep the cache in the decoder and fetch only the new columns (where the graph has them: format 4), or
   * take the grown cache back every run. @default model.keepsOwnCache
   */
  readonly keepOwnCache?: boolean;
}

/** A prefill that started from a released sequence's keys and values (the prefix cache). */
export interface PrefixReuse {
  /** Prompt tokens whose keys and values came from the cache. */
  readonly reused: number;
  readonly promptTokens: number;
}

export interface RunReport {
  readonly kind: 'prefill' | 'decode';
  /** Rows in the run (sequences, plus idle rows of a decode batch). */
  readonly rows: number;
  /** Sequences that got a token's logits (decode) or a chunk (prefill). */
  readonly active: number;
  readonly newTokens: number;
  readonly columns: number;
  readonly ms: number;
}

/** A sequence in the decoder; opaque to callers. */
export interface DecoderSequence {
  readonly id: number;
}

interface Waiter {
  resolve(logits: Float32Array): void;
  reject(error: unknown): void;
}

interface Sequence extends DecoderSequence {
  /** Real tokens in the cache (the next token's position). */
  length: number;
  /** Prompt tokens not yet run. */
  pending: number[];
  /** Logits wanted from this prompt index on (prefill); the last only when it is the last index. */
  logitsFrom: number;
  /** Prompt tokens already run (index into the prompt of pending[0]). */
  consumed: number;
  /** The decode token submitted for the next step. */
  next: number | undefined;
  waiter: Waiter | undefined;
  /** Where the cache lives: a group and a row in it (none before the first run). */
  group: Group | undefined;
  row: number;
  /** Which of the group's columns hold this sequence's real tokens. */
  mask: Uint8Array;
  released: boolean;
  /** The token ids in the cache, in order (the prefix cache's key once the sequence is released). */
  tokens: number[];
}

/** A released sequence's keys and values, compacted: 2 × layers tensors of [1, kvHeads, tokens, headDim]. */
interface PrefixEntry {
  readonly tokens: readonly number[];
  readonly tensors: Float32Array[];
  readonly bytes: number;
  used: number;
}

/** Fewer shared tokens than this are prefilled again rather than copied out of the cache. */
const minimumReuse = 16;

interface Group {
  readonly members: Sequence[];
  /** Columns written so far (real or padding); the next run's new columns go after them. */
  columns: number;
  /** Columns the tensors hold (≥ columns; the rest are spare, masked out). */
  capacity: number;
  tensors: Float32Array[];
}

/** Spare columns a rebuilt cache gets when the decoder keeps its own: a regrowth (one copy of the cache) every this many decode steps. */
const spareColumns = 32;

export class BatchDecoder {
  private readonly model: OnnxModel;
  private readonly maxBatchSize: number;
  private readonly chunk: number;
  private readonly maxPrefillRows: number;
  private readonly onRun: ((run: RunReport) => void) | undefined;
  private readonly ownCache: boolean;
  private readonly prefixCacheBytes: number;
  private readonly prefixEntries: PrefixEntry[] = [];
  private prefixBytes = 0;
  private prefixClock = 0;
  /** Hears every prefill that reused cached keys and values (benchmarks, tests). */
  onPrefixReuse: ((reuse: PrefixReuse) => void) | undefined;
  private readonly prefillQueue: Sequence[] = [];
  private prefillGroup: Group | undefined;
  /** Prefilled, waiting for a row in the decode batch. */
  private readonly joining: Sequence[] = [];
  private decodeGroup: Group | undefined;
  private nextId = 0;
  private scheduled = false;
  private running: Promise<void> | undefined;
  private lastWasDecode = false;
  private closed = false;

  constructor(options: BatchDecoderOptions) {
    this.model = options.model;
    this.maxBatchSize = options.maxBatchSize ?? 32;
    this.chunk = options.prefillChunkTokens ?? 128;
    this.maxPrefillRows = options.maxPrefillRows ?? 8;
    this.onRun = options.onRun;
    if (options.keepOwnCache && !this.model.keepsOwnCache)
      throw new Error('keepOwnCache needs a model graph with new.* outputs (format 4): re-run `longhaul model prepare`');
    this.ownCache = options.keepOwnCache ?? this.model.keepsOwnCache;
    this.prefixCacheBytes = Math.max(0, options.prefixCacheBytes ?? 0);
  }

  /**
   * Run a prompt; resolves with the logits of positions `logitsFrom`..end ([kept × vocab]) and the
   * sequence, which then takes `decode` calls until `release`.
   */
  prefill(
    tokenIds: readonly number[],
    logitsFrom = tokenIds.length - 1,
    signal?: AbortSignal,
  ): Promise<{ sequence: DecoderSequence; logits: Float32Array }> {
    if (this.closed) return Promise.reject(new Error('the policy model is closed'));
    if (tokenIds.length === 0) return Promise.reject(new Error('prefill needs at least one token'));
    const sequence: Sequence = {
      id: (this.nextId += 1),
      length: 0,
      pending: [...tokenIds],
      logitsFrom: Math.min(Math.max(0, logitsFrom), tokenIds.length - 1),
      consumed: 0,
      next: undefined,
      waiter: undefined,
      group: undefined,
      row: 0,
      mask: new Uint8Array(0),
      released: false,
      tokens: [],
    };
    this.startFromPrefix(sequence, tokenIds);
    return new Promise((resolve, reject) => {
      // (The caller checked `signal.aborted` just before.) An aborted caller (its activity timed out or was cancelled) leaves the queue, or the prompt's
      // remaining chunks, at once: under load, retried attempts would otherwise pile up prompts that
      // are prefilled for nobody and slow every live sequence further.
      const onAbort = () => {
        const queued = this.prefillQueue.indexOf(sequence);
        if (queued >= 0) this.prefillQueue.splice(queued, 1);
        else if (sequence.pending.length === 0) return; // through its prompt: the caller releases it
        sequence.released = true;
        const waiter = sequence.waiter;
        sequence.waiter = undefined;
        waiter?.reject(new PrefillAbortedError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      sequence.waiter = {
        resolve: (logits) => {
          signal?.removeEventListener('abort', onAbort);
          resolve({ sequence, logits });
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      this.prefillQueue.push(sequence);
      this.schedule();
    });
  }

  /** Feed the sequence's next token; resolves with the logits row after it (at the next decode step). */
  decode(handle: DecoderSequence, tokenId: number): Promise<Float32Array> {
    const sequence = handle as Sequence;
    if (this.closed) return Promise.reject(new Error('the policy model is closed'));
    if (sequence.released) return Promise.reject(new Error(`sequence ${sequence.id} was released`));
    if (sequence.waiter) return Promise.reject(new Error(`sequence ${sequence.id} already has a run pending`));
    return new Promise((resolve, reject) => {
      sequence.next = tokenId;
      sequence.waiter = { resolve, reject };
      this.schedule();
    });
  }

  /**
   * The sequence leaves the batch at the next step boundary; its cache rows are dropped then. With a
   * prefix cache, its keys and values are kept (copied out now) for a later prompt that extends its tokens.
   */
  release(handle: DecoderSequence): void {
    const sequence = handle as Sequence;
    if (!sequence.released && this.prefixCacheBytes > 0 && !sequence.waiter && sequence.pending.length === 0) this.keepPrefix(sequence);
    sequence.released = true;
    sequence.next = undefined;
    // A prefilled sequence waits in `joining` for a decode step, and only a decode step emptied it: a
    // sequence released before it ever decoded (a scored forced turn) stayed there, and with it the keys
    // and values of its whole prompt (~46 KB a token). Warm-start replays score every gold turn and
    // decode nothing, so the gpu-infer worker grew by ~55 MB a turn, to 14–20 GB (session 29, OOM).
    const waiting = this.joining.indexOf(sequence);
    if (waiting >= 0) this.joining.splice(waiting, 1);
  }

  /** Prefix cache: bytes held and entries (benchmarks, tests). */
  prefixCacheState(): { entries: number; bytes: number } {
    return { entries: this.prefixEntries.length, bytes: this.prefixBytes };
  }

  /** Sequences the decoder still holds between runs: queued for prefill, waiting to join, in the current groups (tests). */
  heldSequences(): number {
    return new Set(this.held()).size;
  }

  /** Every sequence in the prefill queue, the join queue and the current groups (one may be in two). */
  private held(): Sequence[] {
    return [...this.prefillQueue, ...this.joining, ...(this.prefillGroup?.members ?? []), ...(this.decodeGroup?.members ?? [])];
  }

  private keepPrefix(sequence: Sequence): void {
    const group = sequence.group;
    if (!group || sequence.length < minimumReuse || sequence.tokens.length !== sequence.length) return;
    const { layers, kvHeads, headDim } = this.model.manifest;
    const bytes = 2 * layers * kvHeads * sequence.length * headDim * 4;
    if (bytes > this.prefixCacheBytes) return;
    const tensors = Array.from({ length: 2 * layers }, () => new Float32Array(kvHeads * sequence.length * headDim));
    copyRealColumns(group, sequence, tensors, 0, sequence.length, 0, kvHeads, headDim);
    // An entry this one extends is no longer needed: the new one serves every prompt the old one did.
    for (let index = this.prefixEntries.length - 1; index >= 0; index -= 1) {
      const entry = this.prefixEntries[index]!;
      if (entry.tokens.length <= sequence.length && sharedPrefix(entry.tokens, sequence.tokens) === entry.tokens.length)
        this.dropPrefix(index);
    }
    this.prefixEntries.push({ tokens: sequence.tokens, tensors, bytes, used: (this.prefixClock += 1) });
    this.prefixBytes += bytes;
    while (this.prefixBytes > this.prefixCacheBytes) {
      let oldest = 0;
      this.prefixEntries.forEach((entry, index) => {
        if (entry.used < this.prefixEntries[oldest]!.used) oldest = index;
      });
      this.dropPrefix(oldest);
    }
  }

  private dropPrefix(index: number): void {
    this.prefixBytes -= this.prefixEntries[index]!.bytes;
    this.prefixEntries.splice(index, 1);
  }

  /**
   * Start a new sequence from the cached entry it shares the most leading tokens with: its keys and values
   * for those tokens become the sequence's (a one-row group over the entry, read by the next regroup and
   * never written), and only the rest of the prompt is prefilled. At least the last prompt token, and every
   * position whose logits are wanted, are run.
   */
  private startFromPrefix(sequence: Sequence, tokenIds: readonly number[]): void {
    let best: PrefixEntry | undefined;
    let shared = 0;
    for (const entry of this.prefixEntries) {
      const length = sharedPrefix(entry.tokens, tokenIds);
      if (length > shared) [best, shared] = [entry, length];
    }
    shared = Math.min(shared, tokenIds.length - 1, sequence.logitsFrom);
    if (!best || shared < minimumReuse) return;
    best.used = this.prefixClock += 1;
    const capacity = best.tokens.length;
    sequence.group = { members: [sequence], columns: shared, capacity, tensors: best.tensors };
    sequence.row = 0;
    sequence.mask = new Uint8Array(capacity);
    sequence.mask.fill(1, 0, shared);
    sequence.length = shared;
    sequence.consumed = shared;
    sequence.pending = tokenIds.slice(shared);
    sequence.tokens = tokenIds.slice(0, shared);
    this.onPrefixReuse?.({ reused: shared, promptTokens: tokenIds.length });
  }

  /** Finish the run in progress, fail everything still waiting, and refuse new work. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
    const error = new Error('the policy model is closed');
    for (const sequence of this.held()) {
      sequence.waiter?.reject(error);
      sequence.waiter = undefined;
    }
    this.prefillQueue.length = 0;
    this.joining.length = 0;
    this.prefillGroup = undefined;
    this.decodeGroup = undefined;
  }

  /** One round at a time; the next one after the callers' continuations have submitted their tokens. */
  private schedule(): void {
    if (this.scheduled || this.running || this.closed) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.running || this.closed) return;
      this.running = this.round().finally(() => {
        this.running = undefined;
        if (this.hasWork()) this.schedule();
      });
    });
  }

  private decodeReady(): boolean {
    const ready = (sequence: Sequence) => !sequence.released && sequence.next !== undefined;
    return (this.decodeGroup?.members.some(ready) ?? false) || this.joining.some(ready);
  }

  private prefillReady(): boolean {
    return this.prefillQueue.length > 0 || this.prefilling().length > 0;
  }

  /** Members of the prefill group whose prompt is not through yet (the finished ones decode from there). */
  private prefilling(): Sequence[] {
    return (this.prefillGroup?.members ?? []).filter((member) => !member.released && member.pending.length > 0);
  }

  private hasWork(): boolean {
    return this.decodeReady() || this.prefillReady();
  }

  private async round(): Promise<void> {
    const decode = this.decodeReady();
    const prefill = this.prefillReady();
    if (prefill && (!decode || this.lastWasDecode)) {
      this.lastWasDecode = false;
      await this.prefillRound();
    } else if (decode) {
      this.lastWasDecode = true;
      await this.decodeRound();
    }
  }

  private async prefillRound(): Promise<void> {
    const members = this.prefilling();
    const solo = (sequence: Sequence) => sequence.logitsFrom < sequence.consumed + sequence.pending.length - 1;
    const soloRunning = members.some(solo);
    for (let index = 0; !soloRunning && index < this.prefillQueue.length && members.length < this.maxPrefillRows;) {
      const candidate = this.prefillQueue[index]!;
      if (candidate.released) {
        this.prefillQueue.splice(index, 1);
        continue;
      }
      // A prompt that wants many logits rows runs alone (its rows would be paid by every row of the run).
      if (solo(candidate) && members.length > 0) break;
      members.push(candidate);
      this.prefillQueue.splice(index, 1);
      if (solo(candidate)) break;
    }
    if (members.length === 0) {
      this.prefillGroup = undefined;
      return;
    }
    const group = this.regroup(this.prefillGroup, members);
    // Chunks: the next `chunk` tokens; a solo prompt's last chunk takes all that is left once its logits start within a chunk.
    const chunks = members.map((member) => {
      const take =
        solo(member) && member.logitsFrom - member.consumed < this.chunk
          ? member.pending.length
          : Math.min(this.chunk, member.pending.length);
      return member.pending.slice(0, take);
    });
    const widest = Math.max(...chunks.map((chunk) => chunk.length));
    const finishing = members.map((member, index) => chunks[index]!.length === member.pending.length);
    // Logits: the last position for batched prompts; from the first wanted position for a solo one.
    let logitsPositions = [widest - 1];
    if (members.length === 1 && finishing[0]) {
      const member = members[0]!;
      const first = member.logitsFrom - member.consumed; // index in this chunk
      logitsPositions = Array.from({ length: chunks[0]!.length - first }, (_, index) => widest - chunks[0]!.length + first + index);
    }
    let logits: Float32Array;
    try {
      logits = await this.run('prefill', group, chunks, logitsPositions, members.length);
    } catch (error) {
      this.prefillGroup = undefined;
      for (const member of members) this.fail(member, error);
      return;
    }
    const vocab = this.model.manifest.vocabSize;
    const kept = logitsPositions.length;
    members.forEach((member, index) => {
      const taken = chunks[index]!.length;
      member.consumed += taken;
      member.pending = member.pending.slice(taken);
      if (!finishing[index]) return;
      const waiter = member.waiter;
      member.waiter = undefined;
      if (!member.released) this.joining.push(member);
      waiter?.resolve(logits.slice(index * kept * vocab, (index + 1) * kept * vocab));
    });
  }

  private async decodeRound(): Promise<void> {
    const members = (this.decodeGroup?.members ?? []).filter((member) => !member.released);
    while (this.joining.length > 0 && members.length < this.maxBatchSize) {
      const joiner = this.joining.shift()!;
      if (!joiner.released) members.push(joiner);
    }
    if (members.length === 0) {
      this.decodeGroup = undefined;
      return;
    }
    const group = this.regroup(this.decodeGroup, members);
    this.decodeGroup = group;
    // A member with no token submitted yet keeps its row: it gets a padding column this step.
    const tokens = members.map((member) => (member.next === undefined ? [] : [member.next]));
    const active = members.filter((member) => member.next !== undefined);
    for (const member of members) member.next = undefined;
    let logits: Float32Array;
    try {
      logits = await this.run('decode', group, tokens, [0], active.length);
    } catch (error) {
      this.decodeGroup = undefined;
      for (const member of members) this.fail(member, error);
      return;
    }
    const vocab = this.model.manifest.vocabSize;
    // Views, not copies: each run's logits are a fresh array that nothing writes to afterwards.
    members.forEach((member, index) => {
      if (tokens[index]!.length === 0) return;
      const waiter = member.waiter;
      member.waiter = undefined;
      waiter?.resolve(logits.subarray(index * vocab, (index + 1) * vocab));
    });
  }

  private fail(member: Sequence, error: unknown): void {
    member.released = true;
    const waiter = member.waiter;
    member.waiter = undefined;
    waiter?.reject(error);
  }

  /**
   * The group holding exactly `members` in this order: `current` itself when it already does, else
   * a new one with every member's real columns copied right-aligned into `max(length)` columns.
   */
  private regroup(current: Group | undefined, members: Sequence[]): Group {
    if (current && current.members.length === members.length && current.members.every((member, index) => member === members[index]))
      return current;
    const { layers, kvHeads, headDim } = this.model.manifest;
    const columns = Math.max(0, ...members.map((member) => member.length));
    const capacity = this.ownCache ? columns + spareColumns : columns;
    const rows = members.length;
    const tensors = Array.from({ length: 2 * layers }, () => new Float32Array(rows * kvHeads * capacity * headDim));
    members.forEach((member, row) => {
      const source = member.group;
      if (source && member.length > 0) copyRealColumns(source, member, tensors, row, capacity, columns - member.length, kvHeads, headDim);
      member.mask = new Uint8Array(capacity);
      member.mask.fill(1, columns - member.length, columns);
    });
    const group: Group = { members, columns, capacity, tensors };
    members.forEach((member, row) => {
      member.group = group;
      member.row = row;
    });
    return group;
  }

  /** Make room for `newTokens` more columns in a group whose cache the decoder keeps: a larger buffer, the written columns copied. */
  private grow(group: Group, newTokens: number): void {
    const { kvHeads, headDim } = this.model.manifest;
    const capacity = group.columns + newTokens + spareColumns;
    const rows = group.members.length;
    group.tensors = group.tensors.map((from) => {
      const to = new Float32Array(rows * kvHeads * capacity * headDim);
      copyColumns(from, group.capacity, 0, to, capacity, 0, group.columns, rows * kvHeads, headDim);
      return to;
    });
    for (const member of group.members) {
      const mask = new Uint8Array(capacity);
      mask.set(member.mask.subarray(0, group.columns));
      member.mask = mask;
    }
    group.capacity = capacity;
  }

  /** One session run of `group` with each row's new tokens left-padded to the widest; the group takes the new columns. */
  private async run(
    kind: RunReport['kind'],
    group: Group,
    tokens: number[][],
    logitsPositions: number[],
    active: number,
  ): Promise<Float32Array> {
    const rows = group.members.length;
    const newTokens = Math.max(1, ...tokens.map((row) => row.length));
    const ownCache = this.ownCache;
    if (ownCache && group.columns + newTokens > group.capacity) this.grow(group, newTokens);
    // The graph sees the past (every column of the buffer, spare ones masked) and then the new positions.
    const past = group.capacity;
    const total = past + newTokens;
    const tokenIds = new BigInt64Array(rows * newTokens);
    const positionIds = new BigInt64Array(rows * newTokens);
    const attentionMask = new BigInt64Array(rows * total);
    group.members.forEach((member, row) => {
      const own = tokens[row]!;
      const padding = newTokens - own.length;
      for (let index = 0; index < newTokens; index += 1) {
        const real = index >= padding;
        tokenIds[row * newTokens + index] = BigInt(real ? own[index - padding]! : 0);
        positionIds[row * newTokens + index] = BigInt(member.length + Math.max(0, index - padding));
        if (real) attentionMask[row * total + past + index] = 1n;
      }
      for (let column = 0; column < past; column += 1) if (member.mask[column] === 1) attentionMask[row * total + column] = 1n;
    });
    const started = performance.now();
    const output = await this.model.runBatch({
      rows,
      newTokens,
      pastLength: past,
      tokenIds,
      attentionMask,
      positionIds,
      logitsPositions,
      past: group.tensors,
      newOnly: ownCache,
    });
    const ms = performance.now() - started;
    const { kvHeads, headDim } = this.model.manifest;
    let grown: Group;
    if (output.cache.kind === 'new') {
      // The new columns go into the buffer after the written ones: same members, same rows.
      group.tensors.forEach((to, tensor) =>
        copyColumns(output.cache.tensors[tensor]!, newTokens, 0, to, group.capacity, group.columns, newTokens, rows * kvHeads, headDim),
      );
      grown = group;
    } else {
      // The grown cache replaces the group's: same members, same rows; its columns are past + new.
      grown = { members: group.members, columns: total, capacity: total, tensors: output.cache.tensors };
    }
    const start = output.cache.kind === 'new' ? group.columns : past;
    group.members.forEach((member, row) => {
      const mask = grown === group ? member.mask : new Uint8Array(total);
      if (grown !== group) mask.set(member.mask);
      const padding = newTokens - tokens[row]!.length;
      for (let index = padding; index < newTokens; index += 1) mask[start + index] = 1;
      member.group = grown;
      member.mask = mask;
      member.length += tokens[row]!.length;
      for (const token of tokens[row]!) member.tokens.push(token);
    });
    grown.columns = start + newTokens;
    if (kind === 'decode') this.decodeGroup = grown;
    else this.prefillGroup = grown;
    this.onRun?.({ kind, rows, active, newTokens, columns: total, ms });
    return output.logits;
  }
}

/**
 * Copy `member`'s real columns (its mask's ones, in order) out of `source` into row `row` of `to` (2 × layers
 * tensors of [rows, kvHeads, capacity, headDim]), starting at column `offset`.
 */
function copyRealColumns(
  source: Group,
  member: Sequence,
  to: Float32Array[],
  row: number,
  capacity: number,
  offset: number,
  kvHeads: number,
  headDim: number,
): void {
  const runs = realRuns(member.mask);
  to.forEach((target, tensor) => {
    const from = source.tensors[tensor]!;
    for (let head = 0; head < kvHeads; head += 1) {
      const fromBase = (member.row * kvHeads + head) * source.capacity * headDim;
      const toBase = ((row * kvHeads + head) * capacity + offset) * headDim;
      let written = 0;
      for (const [start, end] of runs) {
        target.set(from.subarray(fromBase + start * headDim, fromBase + end * headDim), toBase + written * headDim);
        written += end - start;
      }
    }
  });
}

/**
 * Copy `count` columns of every (row, head) block: from column `fromStart` of `from` (blocks of `fromColumns`
 * columns) to column `toStart` of `to` (blocks of `toColumns`); a column is `headDim` floats.
 */
function copyColumns(
  from: Float32Array,
  fromColumns: number,
  fromStart: number,
  to: Float32Array,
  toColumns: number,
  toStart: number,
  count: number,
  blocks: number,
  headDim: number,
): void {
  for (let block = 0; block < blocks; block += 1) {
    const source = (block * fromColumns + fromStart) * headDim;
    to.set(from.subarray(source, source + count * headDim), (block * toColumns + toStart) * headDim);
  }
}

/** How many leading tokens two sequences share. */
function sharedPrefix(a: readonly number[], b: readonly number[]): number {
  const limit = Math.min(a.length, b.length);
  let index = 0;
  while (index < limit && a[index] === b[index]) index += 1;
  return index;
}

/** [start, end) column ranges of the ones in a mask, in order. */
function realRuns(mask: Uint8Array): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  let start = -1;
  for (let column = 0; column <= mask.length; column += 1) {
    const real = column < mask.length && mask[column] === 1;
    if (real && start < 0) start = column;
    if (!real && start >= 0) {
      runs.push([start, column]);
      start = -1;
    }
  }
  return runs;
}
