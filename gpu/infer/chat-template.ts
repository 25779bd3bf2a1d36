/**
 * SmolLM2's chat template (ChatML with a default system message), written out in TypeScript so the
 * worker needs no Jinja engine. chat-template.test.ts checks it against the Python tokenizer's
 * `apply_chat_template` output.
 */
import type { GenerateRequest } from '../../activities/ports/policy.port.js';

export type ChatMessage = NonNullable<GenerateRequest['messages']>[number];

/** The system message SmolLM2's template inserts when the conversation has none. */
export const defaultSystemMessage = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face';

/** Render messages as ChatML, ending with the assistant's turn opener (generation prompt). */
export function renderChat(messages: readonly ChatMessage[]): string {
  const parts: string[] = [];
  if (messages[0]?.role !== 'system') parts.push(`<|im_start|>system\n${defaultSystemMessage}<|im_end|>\n`);
  for (const message of messages) parts.push(`<|im_start|>${message.role}\n${message.content}<|im_end|>\n`);
  parts.push('<|im_start|>assistant\n');
  return parts.join('');
}
