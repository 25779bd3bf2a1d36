import { spawn } from 'node:child_process';
import { config } from '../../infra/config.js';
import { temporalBinary } from '../../infra/services/binaries.js';
import type { Command } from '../command.js';

export const temporalCommand: Command = {
  name: 'temporal',
  summary: 'run the real temporal CLI against this stack (e.g. longhaul temporal workflow list)',
  usage: `longhaul temporal <temporal CLI arguments…>

Runs the pinned temporal CLI (or yours, if one is on PATH) with TEMPORAL_ADDRESS and
TEMPORAL_NAMESPACE set to this stack's. Example: longhaul temporal workflow list`,
  async run(args) {
    const settings = config();
    const child = spawn(temporalBinary(settings.toolsDir), args, {
      stdio: 'inherit',
      env: { ...process.env, TEMPORAL_ADDRESS: settings.temporal.address, TEMPORAL_NAMESPACE: settings.temporal.namespace },
    });
    return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  },
};
