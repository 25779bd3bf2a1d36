import { analyseTrajectory } from '../../activities/analysis/behaviour.js';
import { loadTrajectoryView } from '../../activities/analysis/trajectory-view.js';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';
import { formatTrajectory } from '../report/trajectory-format.js';

export const showCommand: Command = {
  name: 'show',
  summary: 'print a finished trajectory: each turn, its tool calls and observations, versions, reward',
  usage: `longhaul show <trajectory-id> [--json] [--observation-chars N]

Prints a finished trajectory from its record (trajectories/<id>/record.json) and its turns' tool
results: the question, gold and given answers, reward and its parts, then each turn's text, the
policy version it asked for and the versions that generated its tokens, every tool call with its
input, outcome, documents and the observation the agent saw, and the expert-behaviour measures
(verified by a further search, distinct documents, uncertainty, conflicting evidence). The id is
the trajectory's workflow id (Web UI, \`longhaul report\` pages, \`temporal workflow list\`).

  --json                  one JSON object {"trajectory": …, "behaviour": …} instead of text
  --observation-chars N   clip each observation to N characters (default 0: whole)`,
  async run(args) {
    const { values, positionals } = parseFlags(args, { json: { type: 'boolean' }, 'observation-chars': { type: 'string' } }, true);
    if (positionals.length !== 1) throw new UsageError(`<trajectory-id>: expects one trajectory id, got ${positionals.length}`);
    const trajectoryId = positionals[0]!;
    const observationChars = integerFlag(values['observation-chars'], 'observation-chars', 0, 0, 10_000_000);
    const services = openServices(config());
    try {
      let view;
      try {
        view = await loadTrajectoryView(services.blobs, trajectoryId);
      } catch (error) {
        // An unknown id is bad input (exit 2), not a failure of the stack.
        if (LonghaulError.is(error) && error.code === errorTypes.notFound) throw new UsageError(`<trajectory-id>: ${error.message}`);
        throw error;
      }
      const behaviour = analyseTrajectory(view);
      console.log(values.json ? JSON.stringify({ trajectory: view, behaviour }) : formatTrajectory(view, behaviour, { observationChars }));
      return 0;
    } finally {
      await services.close();
    }
  },
};
