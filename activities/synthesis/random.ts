/** A small deterministic generator (mulberry32), seeded by the run's seed and a task's coordinates, so a run is reproducible. */
export class Random {
  private state: number;

  constructor(seed: number, index: number, label: string) {
    let hash = 2166136261 ^ seed;
    for (const character of `${index}:${label}`) hash = Math.imul(hash ^ character.charCodeAt(0), 16777619);
    // Murmur3's finalizer: nearby seeds and indexes start far apart.
    hash ^= hash >>> 16;
    hash = Math.imul(hash, 0x85ebca6b);
    hash ^= hash >>> 13;
    hash = Math.imul(hash, 0xc2b2ae35);
    hash ^= hash >>> 16;
    this.state = hash >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
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
