import { seededRandom } from '../evaluation/statistics.js';

/** A small deterministic generator (mulberry32), seeded by the run's seed and a task's coordinates, so a run is reproducible. */
export class Random {
  private readonly generator: () => number;

  constructor(seed: number, index: number, label: string) {
    let hash = 2166136261 ^ seed;
    for (const character of `${index}:${label}`) hash = Math.imul(hash ^ character.charCodeAt(0), 16777619);
    // Murmur3's finalizer: nearby seeds and indexes start far apart.
    hash ^= hash >>> 16;
    hash = Math.imul(hash, 0x85ebca6b);
    hash ^= hash >>> 13;
    hash = Math.imul(hash, 0xc2b2ae35);
    hash ^= hash >>> 16;
    this.generator = seededRandom(hash >>> 0);
  }

  next(): number {
    return this.generator();
  }

  below(count: number): number {
    return Math.floor(this.next() * count);
  }

  shuffle<T>(items: readonly T[]): T[] {
    const copy = [...items];
    for (let index = copy.length - 1; index > 0; index -= 1) {
      const other = this.below(index + 1);
      [copy[index], copy[other]] = [copy[other]!, copy[index]!];
    }
    return copy;
  }
}
