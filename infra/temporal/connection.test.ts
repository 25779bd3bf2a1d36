import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../config.js';
import { temporalConnectionOptions } from './connection.js';

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-connection-'));
const pem = (name: string, body: string) => {
  const file = path.join(folder, name);
  fs.writeFileSync(file, `-----BEGIN ${body}-----\nMIIB\n-----END ${body}-----\n`);
  return file;
};
const caFile = pem('ca.pem', 'CERTIFICATE');
const certFile = pem('client.pem', 'CERTIFICATE');
const keyFile = pem('client.key', 'PRIVATE KEY');

test('the embedded dev server is reached without TLS or credentials', () => {
  const options = temporalConnectionOptions(loadConfig({}));
  assert.equal(options.address, '127.0.0.1:7233');
  assert.equal(options.tls, undefined);
  assert.equal(options.apiKey, undefined);
});

test('a profile with TLS settings gives a TLS connection with its CA, server name and client certificate', () => {
  const file = path.join(folder, 'temporal.toml');
  fs.writeFileSync(
    file,
    `[profile.secured]
address = "temporal.internal:7233"
namespace = "research"
[profile.secured.tls]
server_ca_cert_path = "${caFile}"
server_name = "frontend.temporal.internal"
client_cert_path = "${certFile}"
client_key_path = "${keyFile}"
`,
  );
  const options = temporalConnectionOptions(loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'secured' }));
  assert.equal(options.address, 'temporal.internal:7233');
  assert.ok(typeof options.tls === 'object' && options.tls !== null, `expected TLS options, got ${String(options.tls)}`);
  assert.equal(options.tls.serverNameOverride, 'frontend.temporal.internal');
  assert.equal(Buffer.from(options.tls.serverRootCACertificate!).toString(), fs.readFileSync(caFile, 'utf8'));
  assert.equal(Buffer.from(options.tls.clientCertPair!.crt).toString(), fs.readFileSync(certFile, 'utf8'));
  assert.equal(Buffer.from(options.tls.clientCertPair!.key).toString(), fs.readFileSync(keyFile, 'utf8'));
});

test('the same TLS settings from TEMPORAL_TLS_* variables alone, and TEMPORAL_TLS=false turns TLS off', () => {
  const options = temporalConnectionOptions(
    loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS_SERVER_CA_CERT_PATH: caFile }),
  );
  assert.ok(typeof options.tls === 'object' && options.tls !== null);
  assert.equal(Buffer.from(options.tls.serverRootCACertificate!).toString(), fs.readFileSync(caFile, 'utf8'));
  assert.equal(
    temporalConnectionOptions(loadConfig({ TEMPORAL_ADDRESS: 'a:1', TEMPORAL_TLS: 'false', TEMPORAL_TLS_SERVER_NAME: 'x' })).tls,
    false,
  );
});

test('an API key alone (Temporal Cloud) turns TLS on with the system roots', () => {
  const options = temporalConnectionOptions(
    loadConfig({
      TEMPORAL_ADDRESS: 'longhaul.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'longhaul.a1b2c',
      TEMPORAL_API_KEY: 'secret-key',
    }),
  );
  assert.equal(options.tls, true);
  assert.equal(options.apiKey, 'secret-key');
});

test('certificate data given inline (TEMPORAL_TLS_SERVER_CA_CERT_DATA) is used as it is', () => {
  const certificate = fs.readFileSync(caFile, 'utf8');
  const options = temporalConnectionOptions(
    loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS_SERVER_CA_CERT_DATA: certificate }),
  );
  assert.ok(typeof options.tls === 'object' && options.tls !== null);
  assert.equal(Buffer.from(options.tls.serverRootCACertificate!).toString(), certificate);
});
