/** Countries from npm `world-countries` (ODbL-1.0): one document per country, facts as relations. */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { formatNumber, listText, type CorpusPart, type KbEntity, type KbRelation } from '../knowledge-base.js';

/** Some entries have [] where a record is expected (no currency, no language). */
const recordOrEmpty = <T extends z.ZodType>(value: T) =>
  z.preprocess((raw) => (Array.isArray(raw) ? {} : raw), z.record(z.string(), value).default({}));

const countrySchema = z
  .object({
    name: z.object({ common: z.string(), official: z.string() }),
    cca2: z.string(),
    cca3: z.string(),
    capital: z.array(z.string()).default([]),
    region: z.string(),
    subregion: z.string().default(''),
    languages: recordOrEmpty(z.string()),
    currencies: recordOrEmpty(z.object({ name: z.string(), symbol: z.string().optional() })),
    borders: z.array(z.string()).default([]),
    area: z.number(),
    landlocked: z.boolean(),
    unMember: z.boolean(),
    independent: z.boolean().nullish(),
    tld: z.array(z.string()).default([]),
    callingCodes: z.array(z.string()).default([]),
    demonyms: z
      .object({ eng: z.object({ m: z.string() }).optional() })
      .partial()
      .default({}),
  })
  .loose();

export type Country = z.infer<typeof countrySchema>;

export function loadCountries(): Country[] {
  const require = createRequire(import.meta.url);
  const folder = path.dirname(require.resolve('world-countries/package.json'));
  const raw: unknown = JSON.parse(fs.readFileSync(path.join(folder, 'dist', 'countries.json'), 'utf8'));
  return z.array(countrySchema).parse(raw);
}

export const countryEntityId = (cca3: string) => `country:${cca3}`;
export const countryDocumentId = (cca3: string) => `country-${cca3.toLowerCase()}`;

export function countriesPart(countries: readonly Country[], capitalCityIds: ReadonlyMap<string, string>): CorpusPart {
  const byCode = new Map(countries.map((country) => [country.cca3, country]));
  const entities: KbEntity[] = [];
  const relations: KbRelation[] = [];
  const documents = countries.map((country) => {
    const id = countryEntityId(country.cca3);
    const documentId = countryDocumentId(country.cca3);
    const name = country.name.common;
    const fact = (predicate: string, objectText: string, objectId: string | null = null) =>
      relations.push({ subjectId: id, predicate, objectId, objectText, documentId });
    const sentences = [
      `${name} (officially ${country.name.official}) is a ${country.independent === false ? 'territory' : 'country'} in ${country.subregion ? `${country.subregion}, ` : ''}${country.region}.`,
    ];
    fact('region', country.region);
    if (country.subregion) fact('subregion', country.subregion);
    if (country.capital.length > 0) {
      sentences.push(`Its capital is ${listText(country.capital)}.`);
      for (const capital of country.capital) fact('capital', capital, capitalCityIds.get(`${country.cca2}/${capital}`) ?? null);
    }
    sentences.push(`It covers an area of ${formatNumber(country.area)} square kilometres.`);
    fact('area_km2', formatNumber(country.area));
    const languages = Object.values(country.languages);
    if (languages.length > 0) sentences.push(`Its official language${languages.length > 1 ? 's are' : ' is'} ${listText(languages)}.`);
    for (const language of languages) fact('official_language', language);
    const currencies = Object.entries(country.currencies);
    if (currencies.length > 0)
      sentences.push(
        `Its currency ${currencies.length > 1 ? 'units are' : 'is'} ${listText(currencies.map(([code, c]) => `the ${c.name} (${code}${c.symbol ? `, ${c.symbol}` : ''})`))}.`,
      );
    for (const [code, currency] of currencies) fact('currency', currency.name, `currency:${code}`);
    const neighbours = country.borders.map((code) => byCode.get(code)).filter((c): c is Country => c !== undefined);
    sentences.push(
      neighbours.length > 0 ? `It borders ${listText(neighbours.map((c) => c.name.common))}.` : `It borders no other country by land.`,
    );
    for (const neighbour of neighbours) fact('borders', neighbour.name.common, countryEntityId(neighbour.cca3));
    sentences.push(
      country.landlocked ? 'It is landlocked.' : 'It has a coastline.',
      country.unMember ? 'It is a member of the United Nations.' : 'It is not a member of the United Nations.',
    );
    fact('landlocked', country.landlocked ? 'yes' : 'no');
    fact('un_member', country.unMember ? 'yes' : 'no');
    if (country.demonyms.eng) {
      sentences.push(`Its people are called ${country.demonyms.eng.m}.`);
      fact('demonym', country.demonyms.eng.m);
    }
    if (country.tld[0]) {
      sentences.push(`Its internet country code is ${country.tld[0]}.`);
      fact('internet_tld', country.tld[0]);
    }
    if (country.callingCodes[0]) {
      sentences.push(`Its telephone calling code is ${country.callingCodes[0]}.`);
      fact('calling_code', country.callingCodes[0]);
    }
    entities.push({
      id,
      kind: 'country',
      name,
      documentId,
      attributes: { cca2: country.cca2, cca3: country.cca3, officialName: country.name.official },
    });
    return { id: documentId, title: name, text: sentences.join(' '), url: null };
  });
  return { source: 'world-countries', licence: 'ODbL-1.0', documents, entities, relations };
}
