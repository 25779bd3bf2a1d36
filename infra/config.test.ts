import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from './config.js';
import { repoRoot } from './paths.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

test('an empty environment gives the embedded defaults', () => {
  const config = loadConfig({});
  assert.equal(config.temporal.address, '127.0.0.1:7233');
  assert.equal(config.temporal.embedded, true);
  assert.equal(config.postgres.url, 'postgres://longhaul@127.0.0.1:55432/longhaul');
  assert.equal(config.s3.endpoint, 'http://127.0.0.1:8333');
  assert.equal(config.s3.bucket, 'longhaul');
  assert.equal(config.payloadThresholdBytes, 131072);
  assert.equal(config.home, path.join(repoRoot, '.longhaul'));
});

test('user-provided services are respected and marked external', () => {
  const config = loadConfig({
    TEMPORAL_ADDRESS: 'temporal.internal:7233',
    DATABASE_URL: 'postgres://u:p@db:5432/x',
    S3_ENDPOINT: 'https://s3.example.com',
  });
  assert.equal(config.temporal.embedded, false);
  assert.equal(config.temporal.address, 'temporal.internal:7233');
  assert.equal(config.postgres.embedded, false);
  assert.equal(config.s3.embedded, false);
});

test('a wrong value stops with a message naming the variable and the fix', () => {
  assert.throws(
    () => loadConfig({ LONGHAUL_PG_PORT: '70000' }),
    (error: unknown) => {
      assert.ok(error instanceof LonghaulError && error.code === errorTypes.invalidInput);
      assert.match(error.message, /^LONGHAUL_PG_PORT="70000" is invalid: .*Fix or unset LONGHAUL_PG_PORT/);
      return true;
    },
  );
  assert.throws(() => loadConfig({ TEMPORAL_ADDRESS: 'no-port' }), /TEMPORAL_ADDRESS="no-port" is invalid: expected host:port/);
  assert.throws(() => loadConfig({ S3_BUCKET: 'Bad_Bucket' }), /S3_BUCKET="Bad_Bucket" is invalid/);
});

test('the config is immutable', () => {
  const config = loadConfig({});
  assert.throws(() => {
    (config.temporal as { address: string }).address = 'x';
  }, TypeError);
});

function temporalConfigFile(toml: string): { folder: string; file: string } {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-envconfig-'));
  const file = path.join(folder, 'temporal.toml');
  fs.writeFileSync(file, toml);
  return { folder, file };
}

test('a Temporal config-file profile gives the address, namespace and credentials; TEMPORAL_* variables override it', () => {
  const { file } = temporalConfigFile(`
[profile.default]
address = "default.example:7233"

[profile.cloud]
address = "longhaul.a1b2c.tmprl.cloud:7233"
namespace = "longhaul.a1b2c"
api_key = "secret-key"
[profile.cloud.grpc_meta]
x-tenant = "research"
`);
  const fromDefault = loadConfig({ TEMPORAL_CONFIG_FILE: file });
  assert.equal(fromDefault.temporal.address, 'default.example:7233');
  assert.equal(fromDefault.temporal.namespace, 'default');
  assert.equal(fromDefault.temporal.embedded, false);

  const cloud = loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' });
  assert.equal(cloud.temporal.address, 'longhaul.a1b2c.tmprl.cloud:7233');
  assert.equal(cloud.temporal.namespace, 'longhaul.a1b2c');
  assert.equal(cloud.temporal.apiKey, 'secret-key');
  assert.deepEqual(cloud.temporal.grpcMetadata, { 'x-tenant': 'research' });
  assert.equal(cloud.temporal.embedded, false);
  assert.match(cloud.temporal.profile ?? '', /^cloud \(/);

  const overridden = loadConfig({
    TEMPORAL_CONFIG_FILE: file,
    TEMPORAL_PROFILE: 'cloud',
    TEMPORAL_ADDRESS: 'other.example:7233',
    TEMPORAL_NAMESPACE: 'mine',
  });
  assert.equal(overridden.temporal.address, 'other.example:7233');
  assert.equal(overridden.temporal.namespace, 'mine');
  assert.equal(overridden.temporal.apiKey, 'secret-key');
});

test("the user's own temporal.toml is read only when TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE asks for it", () => {
  const { folder } = temporalConfigFile('');
  fs.mkdirSync(path.join(folder, 'temporalio'));
  fs.writeFileSync(path.join(folder, 'temporalio', 'temporal.toml'), '[profile.default]\naddress = "work-cluster.example:7233"\n');
  const untouched = loadConfig({ XDG_CONFIG_HOME: folder });
  assert.equal(untouched.temporal.embedded, true);
  assert.equal(untouched.temporal.address, '127.0.0.1:7233');
  assert.equal(untouched.temporal.profile, null);
  const asked = loadConfig({ XDG_CONFIG_HOME: folder, TEMPORAL_PROFILE: 'default' });
  assert.equal(asked.temporal.address, 'work-cluster.example:7233');
  assert.equal(asked.temporal.embedded, false);
});

test('a wrong Temporal config file or profile stops with a message naming it', () => {
  const { file, folder } = temporalConfigFile(
    '[profile.default]\naddress = "no-port"\n\n[profile.tls]\naddress = "a:1"\n[profile.tls.tls]\nserver_ca_cert_path = "/nonexistent/ca.pem"\n',
  );
  assert.throws(
    () => loadConfig({ TEMPORAL_CONFIG_FILE: path.join(folder, 'missing.toml') }),
    /^LonghaulError: TEMPORAL_CONFIG_FILE=".*missing\.toml" is invalid: no such file/,
  );
  assert.throws(
    () => loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' }),
    /TEMPORAL_PROFILE="staging" is invalid: no \[profile\.staging\] in .*temporal\.toml/,
  );
  assert.throws(() => loadConfig({ TEMPORAL_CONFIG_FILE: file }), /address "no-port" of Temporal profile default .* expected host:port/);
  assert.throws(
    () => loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'tls' }),
    /server_ca_cert_path "\/nonexistent\/ca\.pem" .*TEMPORAL_TLS_SERVER_CA_CERT_PATH.* no such file/,
  );
  const typo = temporalConfigFile('[profile.default]\nadress = "x:1"\n').file;
  assert.throws(
    () => loadConfig({ TEMPORAL_CONFIG_FILE: typo }),
    /Temporal config file .*temporal\.toml is invalid: .*unrecognized in profile\.default: adress/,
  );
  const broken = temporalConfigFile('[profile.default\naddress = 1\n').file;
  assert.throws(() => loadConfig({ TEMPORAL_CONFIG_FILE: broken }), /Temporal config file .*temporal\.toml is invalid: /);
  assert.throws(() => loadConfig({ TEMPORAL_TLS: 'yes' }), /TEMPORAL_TLS="yes" is invalid/);
});
