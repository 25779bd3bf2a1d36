/**
 * Histories in Temporal's JSON form (`temporal workflow show -o json`), decoded with the protobufjs copy
 * that @temporalio/proto's types belong to. The SDK's own historyFromJSON uses another copy in 1.24 and
 * fails with "type must be a Type".
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import proto from '@temporalio/proto';

type History = proto.temporal.api.history.v1.History;

const protoRequire = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'));
const { fromJson } = protoRequire('protobufjs/ext/protojson') as { fromJson: (type: unknown, json: unknown) => History | null };

export function loadJsonHistory(file: string): History {
  const history = fromJson(proto.temporal.api.history.v1.History, JSON.parse(fs.readFileSync(file, 'utf8')));
  if (!history?.events?.length) throw new Error(`${file}: not a Temporal history (expected {"events": [...]})`);
  return history;
}
