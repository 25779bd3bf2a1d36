import type { ClientConfigTLS, ConfigDataSource } from '@temporalio/envconfig';
import { config, environmentSchema } from '../../infra/config.js';
import { parseFlags } from '../arguments.js';
import type { Command } from '../command.js';

/** The variables table of docs/CONFIG.md, generated from the schema so the two never drift. */
export function configMarkdownTable(): string {
  const lines = ['| Variable | Default | Meaning |', '|---|---|---|'];
  for (const [name, schema] of Object.entries(environmentSchema.shape)) {
    const description = schema.description ?? '';
    const fallback = (schema as { def?: { defaultValue?: unknown } }).def?.defaultValue;
    lines.push(
      `| \`${name}\` | ${fallback === undefined ? '—' : fallback === '' ? '(empty)' : `\`${String(fallback)}\``} | ${description} |`,
    );
  }
  return lines.join('\n');
}

/** TLS settings with inline certificate and key data replaced by `***` (paths shown as they are). */
function maskedTls(tls: ClientConfigTLS | null): object | null {
  if (tls === null) return null;
  const shown = (source: ConfigDataSource | undefined) => (source === undefined ? undefined : 'path' in source ? source.path : '***');
  return { ...tls, serverCACert: shown(tls.serverCACert), clientCert: shown(tls.clientCert), clientKey: shown(tls.clientKey) };
}

/** A connection URL with its password replaced by `***`. */
function maskedUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return '***';
  }
}

export const configCommand: Command = {
  name: 'config',
  summary: 'print the effective configuration (secrets masked), or the variables as a markdown table',
  usage: `longhaul config [--markdown]

Prints the configuration read from the environment as JSON, secrets masked.
  --markdown   print every variable with its default and meaning (docs/CONFIG.md's table)`,
  async run(args) {
    const { values } = parseFlags(args, { markdown: { type: 'boolean' } });
    if (values.markdown) {
      console.log(configMarkdownTable());
      return 0;
    }
    const settings = config();
    console.log(
      JSON.stringify(
        {
          ...settings,
          s3: { ...settings.s3, secretKey: '***' },
          payloadKeys: settings.payloadKeys.map((entry) => ({ id: entry.id, key: '***' })),
          temporal: {
            ...settings.temporal,
            apiKey: settings.temporal.apiKey === null ? null : '***',
            tls: maskedTls(settings.temporal.tls),
          },
          postgres: { ...settings.postgres, url: maskedUrl(settings.postgres.url) },
          tools: {
            ...settings.tools,
            webSearch: settings.tools.webSearch && {
              ...settings.tools.webSearch,
              apiKey: settings.tools.webSearch.apiKey === null ? null : '***',
            },
            sqlUrl: settings.tools.sqlUrl && maskedUrl(settings.tools.sqlUrl),
          },
          judge: { ...settings.judge, apiKey: settings.judge.apiKey === null ? null : '***' },
          policy: {
            ...settings.policy,
            openai: { ...settings.policy.openai, apiKey: settings.policy.openai.apiKey === null ? null : '***' },
          },
        },
        null,
        2,
      ),
    );
    return 0;
  },
};
