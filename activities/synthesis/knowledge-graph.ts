/**
 * The knowledge base in memory, indexed for the grounded synthesizer and the uniqueness proof: the
 * entities that satisfy every constraint of a chain are enumerated exhaustively over all of it.
 */
import type { KnowledgeBaseEntity, KnowledgeBaseRelation, KnowledgeBaseSnapshot } from '../ports/knowledge-base.port.js';
import type { ChainNode, Fuzz, LiteralConstraint } from '../../workflows/contracts/synthesis.contract.js';

export class KnowledgeGraph {
  readonly entities = new Map<string, KnowledgeBaseEntity>();
  readonly bySubject = new Map<string, KnowledgeBaseRelation[]>();
  readonly byObject = new Map<string, KnowledgeBaseRelation[]>();
  readonly byKindAndName = new Map<string, string[]>();
  readonly byKind = new Map<string, string[]>();
  /** Relations dropped because they are malformed (empty text, unknown subject), with why. */
  readonly skipped: string[] = [];

  constructor(readonly snapshot: KnowledgeBaseSnapshot) {
    for (const entity of snapshot.entities) {
      if (entity.name.trim() === '') {
        this.skipped.push(`entity ${entity.id}: empty name`);
        continue;
      }
      this.entities.set(entity.id, entity);
      push(this.byKind, entity.kind, entity.id);
      push(this.byKindAndName, `${entity.kind}\u0000${entity.name}`, entity.id);
    }
    for (const relation of snapshot.relations) {
      if (!this.entities.has(relation.subjectId) || relation.objectText.trim() === '') {
        this.skipped.push(
          `relation ${relation.subjectId} ${relation.predicate}: ${relation.objectText.trim() === '' ? 'empty object' : 'unknown subject'}`,
        );
        continue;
      }
      push(this.bySubject, relation.subjectId, relation);
      if (relation.objectId !== null && this.entities.has(relation.objectId)) push(this.byObject, relation.objectId, relation);
    }
  }

  relations(subjectId: string, predicate?: string): KnowledgeBaseRelation[] {
    const all = this.bySubject.get(subjectId) ?? [];
    return predicate === undefined ? all : all.filter((relation) => relation.predicate === predicate);
  }

  /**
   * Every entity a description can mean: the last node by its name (all entities of its kind with
   * that name), each earlier node by its link to the next node's set and all its literals.
   */
  satisfying(nodes: readonly ChainNode[]): Set<string>[] {
    const sets: Set<string>[] = new Array<Set<string>>(nodes.length);
    const last = nodes.length - 1;
    sets[last] = new Set(this.byKindAndName.get(`${nodes[last]!.kind}\u0000${nodes[last]!.name}`) ?? []);
    for (let index = last - 1; index >= 0; index -= 1) {
      const node = nodes[index]!;
      const next = sets[index + 1]!;
      const link = node.link!;
      const linked = new Set<string>();
      for (const other of next) {
        if (link.forward) {
          for (const relation of this.byObject.get(other) ?? [])
            if (relation.predicate === link.fact.predicate) linked.add(relation.subjectId);
        } else {
          for (const relation of this.relations(other, link.fact.predicate)) if (relation.objectId !== null) linked.add(relation.objectId);
        }
      }
      const set = new Set<string>();
      for (const id of linked) {
        if (this.entities.get(id)?.kind !== node.kind) continue;
        if (node.literals.every((literal) => this.holds(id, literal))) set.add(id);
      }
      sets[index] = set;
    }
    return sets;
  }

  /** Whether an entity has a relation matching the literal (exact, or within its fuzz). */
  holds(entityId: string, literal: LiteralConstraint): boolean {
    return this.relations(entityId, literal.fact.predicate).some((relation) =>
      matches(relation.objectText, literal.fact.objectText, literal.fuzz),
    );
  }

  /** The answers the question admits: the seed predicate's objects over every entity the first node can be. */
  answers(nodes: readonly ChainNode[], seedPredicate: string): { answers: Set<string>; sizes: number[] } {
    const sets = this.satisfying(nodes);
    const answers = new Set<string>();
    for (const id of sets[0]!) for (const relation of this.relations(id, seedPredicate)) answers.add(relation.objectText);
    return { answers, sizes: sets.map((set) => set.size) };
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** "551,695" → 551695; null when the text is not a plain number. */
export function parseNumber(text: string): number | null {
  const cleaned = text.replace(/,/g, '').trim();
  if (!/^-?\d+(\.\d+)?$/.test(cleaned)) return null;
  return Number(cleaned);
}

export function matches(candidate: string, exact: string, fuzz: Fuzz | undefined): boolean {
  if (!fuzz) return candidate === exact;
  if (fuzz.kind === 'range') {
    const value = parseNumber(candidate);
    return value !== null && value >= fuzz.low && value < fuzz.high;
  }
  if (fuzz.kind === 'decade') {
    const value = parseNumber(candidate);
    return value !== null && Number.isInteger(value) && value >= fuzz.decade && value < fuzz.decade + 10;
  }
  return candidate.toLowerCase().startsWith(fuzz.prefix.toLowerCase()) && [...candidate].length === fuzz.length;
}
