import type { GroupScale } from '../../workflows/contracts/trajectory.contract.js';

/**
 * The advantage a group of rewards gives each of its samples, as the engine computes it with
 * `hyperparameters.ppo.groupNormalise` (the default): (reward − group mean) / (population std + 1e-6) with
 * `ppo.groupScale` "std" (the default), reward − group mean with "none". A group whose rewards are all equal gives
 * every sample 0: it teaches nothing. Pure; the engine (gpu/engine) is what trains, this is for reading where a run's
 * signal went.
 */
export function groupAdvantages(rewards: readonly number[], scale: GroupScale = 'std'): number[] {
  if (rewards.length === 0) return [];
  const mean = rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length;
  if (scale === 'none') return rewards.map((reward) => reward - mean);
  const std = Math.sqrt(rewards.reduce((sum, reward) => sum + (reward - mean) ** 2, 0) / rewards.length);
  return rewards.map((reward) => (reward - mean) / (std + 1e-6));
}
