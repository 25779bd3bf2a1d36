/** Chemical elements from npm `chemical-elements` (MIT): name, symbol, atomic number and mass. */
import { createRequire } from 'node:module';
import { z } from 'zod';
import { formatNumber, type CorpusPart, type KbEntity, type KbRelation } from '../knowledge-base.js';

const elementSchema = z.object({
  number: z.number().int(),
  symbol: z.string(),
  name: z.string(),
  mass: z.number().nullish(),
  monoisotopicMass: z.number().nullish(),
});

export function elementsPart(): CorpusPart {
  const require = createRequire(import.meta.url);
  const { elements } = z.object({ elements: z.array(elementSchema) }).parse(require('chemical-elements'));
  const entities: KbEntity[] = [];
  const relations: KbRelation[] = [];
  const documents = elements.map((element) => {
    const id = `element:${element.symbol}`;
    const documentId = `element-${element.symbol.toLowerCase()}`;
    const sentences = [`${element.name} is the chemical element with the symbol ${element.symbol} and atomic number ${element.number}.`];
    const fact = (predicate: string, objectText: string) =>
      relations.push({ subjectId: id, predicate, objectId: null, objectText, documentId });
    fact('symbol', element.symbol);
    fact('atomic_number', String(element.number));
    if (element.mass) {
      sentences.push(`Its standard atomic weight is ${formatNumber(element.mass, 3)}.`);
      fact('atomic_weight', formatNumber(element.mass, 3));
    }
    if (element.monoisotopicMass)
      sentences.push(`Its most abundant isotope has a mass of ${formatNumber(element.monoisotopicMass, 4)} daltons.`);
    const previous = elements.find((other) => other.number === element.number - 1);
    const next = elements.find((other) => other.number === element.number + 1);
    if (previous) sentences.push(`It comes after ${previous.name} in the periodic table.`);
    if (next) sentences.push(`It comes before ${next.name}.`);
    entities.push({ id, kind: 'element', name: element.name, documentId, attributes: { number: element.number, symbol: element.symbol } });
    return { id: documentId, title: element.name, text: sentences.join(' '), url: null };
  });
  return { source: 'chemical-elements', licence: 'MIT', documents, entities, relations };
}
