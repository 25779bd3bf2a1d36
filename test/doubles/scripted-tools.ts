/** Instant tools for tests and the overhead benchmark: same contract as the tool registry. */
import type { ToolActivities, ToolResult } from '../../workflows/contracts/tools.contract.js';

export function createScriptedTools(onCall?: (key: string, index: number) => void): Pick<ToolActivities, 'runTools'> {
  return {
    async runTools({ key, calls }) {
      return calls.map((call, index): ToolResult => {
        onCall?.(key, index);
        const query = (call.input as { query?: string; target?: string }).query ?? (call.input as { target?: string }).target ?? '';
        return {
          tool: call.tool,
          ok: true,
          invalid: false,
          observation: `result ${index} for ${query}`,
          truncated: false,
          latencyMs: 0,
          cacheHit: false,
          documentIds: [`doc-${query.length}`],
        };
      });
    },
  };
}
