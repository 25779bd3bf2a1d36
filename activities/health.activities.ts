/** A `ping` activity on every queue: proves a worker for that queue is alive and says which. */
export function createHealthActivities(role: string) {
  const startedAt = Date.now();
  return {
    async ping(): Promise<{ role: string; pid: number; uptimeSeconds: number }> {
      return { role, pid: process.pid, uptimeSeconds: Math.round((Date.now() - startedAt) / 1000) };
    },
  };
}
