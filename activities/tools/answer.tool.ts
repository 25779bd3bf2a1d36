/** `answer`: the agent's final answer. It ends the trajectory; the reward is computed elsewhere. */
import { z } from 'zod';
import type { AnswerToolInput } from '../../workflows/contracts/tools.contract.js';
import type { ToolPlugin } from './registry.js';

export function createAnswerTool(): ToolPlugin<AnswerToolInput> {
  return {
    name: 'answer',
    description: 'Give the final answer to the question, as short as possible (a name, number or phrase). Ends the episode.',
    inputSchema: z.strictObject({ answer: z.string().trim().min(1).max(2000).describe('The final answer, short.') }),
    successCriterion: 'the answer is not empty',
    cacheable: false,
    runsLocally: () => true,
    execute: async (input) => ({ observation: `Answer recorded: ${input.answer}` }),
    judge: (output) => output.observation.length > 'Answer recorded: '.length,
  };
}
