/**
 * The `policyCapabilities` activity (gpu-infer queue): whether the configured policy backend's
 * generations carry token ids and behaviour logprobs, which RL trains on. The learner asks once
 * when it starts and refuses a backend that cannot give both.
 */
import { ApplicationFailure } from '@temporalio/common';
import { errorTypes } from './errors.js';

export interface PolicyCapabilitiesResult {
  readonly backend: 'onnx' | 'openai' | 'scripted';
  readonly tokenIds: boolean;
  readonly logprobs: boolean;
  /** How the backend found out (for an OpenAI-compatible server: what its probe saw). */
  readonly detail: string;
}

export interface PolicyCapabilitiesActivities {
  policyCapabilities(): Promise<PolicyCapabilitiesResult>;
}

/** Throws a non-retryable LonghaulInvalidInput failure naming the backend and the fix unless it gives token ids and logprobs. */
export function requireTrainablePolicy(capabilities: PolicyCapabilitiesResult): void {
  if (capabilities.tokenIds && capabilities.logprobs) return;
  const lacking = [capabilities.tokenIds ? null : 'token ids', capabilities.logprobs ? null : 'logprobs']
    .filter((part) => part !== null)
    .join(' or ');
  throw ApplicationFailure.nonRetryable(
    `learner: the policy backend "${capabilities.backend}" of the gpu-infer worker returns no ${lacking} (${capabilities.detail}), so its trajectories cannot be trained on. ` +
      'Serve the policy from a server that returns them (vLLM or SGLang with return_tokens_as_token_ids, or `longhaul serve`) ' +
      'or set LONGHAUL_POLICY_BACKEND=onnx, and restart the gpu-infer worker.',
    errorTypes.invalidInput,
    capabilities,
  );
}
