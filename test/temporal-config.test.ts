/** A Temporal config-file profile (@temporalio/envconfig) is what clients and workers connect with. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../infra/config.js';
import { createS3BlobStore } from '../infra/blob/blob-store.s3.js';
import { connectClient, connectWorker } from '../infra/temporal/connection.js';
import { testConfig } from './helpers/stack.js';

test('a profile pointing at the test stack is honoured by clients and workers, over the embedded default', async () => {
  const stack = testConfig();
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-profile-'));
  const file = path.join(folder, 'temporal.toml');
  fs.writeFileSync(file, `[profile.stack]\naddress = "${stack.temporal.address}"\nnamespace = "${stack.temporal.namespace}"\n`);
  // Port 1: without the profile, every connection would go to an embedded server that is not there.
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    LONGHAUL_TEMPORAL_PORT: '1',
    TEMPORAL_CONFIG_FILE: file,
    TEMPORAL_PROFILE: 'stack',
  };
  delete environment.TEMPORAL_ADDRESS;
  delete environment.TEMPORAL_NAMESPACE;
  const config = loadConfig(environment);
  assert.equal(config.temporal.address, stack.temporal.address);
  assert.equal(config.temporal.embedded, false);

  const client = await connectClient(config, createS3BlobStore(config));
  try {
    const described = await client.workflowService.describeNamespace({ namespace: config.temporal.namespace });
    assert.equal(described.namespaceInfo?.name, stack.temporal.namespace);
  } finally {
    await client.connection.close();
  }
  const worker = await connectWorker(config);
  try {
    const info = await worker.workflowService.getSystemInfo({});
    assert.ok(info.serverVersion, 'the server answered the worker connection');
  } finally {
    await worker.close();
  }
  await assert.rejects(
    connectClient(loadConfig({ ...environment, TEMPORAL_CONFIG_FILE: '', TEMPORAL_PROFILE: '' }), createS3BlobStore(config)),
    /cannot reach Temporal at 127\.0\.0\.1:1/,
  );
});
