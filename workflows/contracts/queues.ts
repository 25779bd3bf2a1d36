/** Task queues of DESIGN §2. Each scales apart and has its own worker process. */
export const queueRoles = ['agent', 'tools', 'gpu-infer', 'gpu-train'] as const;
export type QueueRole = (typeof queueRoles)[number];

/** The task queue name for a role, with an optional prefix that isolates tests or tenants. */
export function taskQueueName(role: QueueRole, prefix = ''): string {
  return `${prefix}${role}`;
}

/** The prefix of a task queue named by taskQueueName (so a workflow finds its sibling queues). */
export function queuePrefixOf(taskQueue: string, role: QueueRole = 'agent'): string {
  return taskQueue.endsWith(role) ? taskQueue.slice(0, taskQueue.length - role.length) : '';
}
