/**
 * The tool-call contract between the trajectory workflow (agent queue) and tool execution
 * (tools queue). The workflow parses model output into ToolCalls; `runTools` executes one turn's
 * calls in parallel and returns one ToolResult per call, in order. Never throws for a bad call.
 */
export interface ToolCall {
  /** Registered tool name: search, access, answer, web_search, web_fetch, sql… */
  readonly tool: string;
  /** Raw input as the model gave it; validated by the tool's schema inside runTools. */
  readonly input: unknown;
}

export interface RunToolsInput {
  /** Idempotency key of this turn, e.g. "<trajectoryId>/turn-0007". Results are cached per (key, index). */
  readonly key: string;
  readonly calls: readonly ToolCall[];
  /** Observation text is truncated to this many characters with a marker. @default 5000 */
  readonly maxObservationChars?: number;
}

export interface ToolResult {
  readonly tool: string;
  /** The tool ran and its own success check passed. */
  readonly ok: boolean;
  /** The call itself was malformed (unknown tool, input failed the schema): the step is invalid. */
  readonly invalid: boolean;
  /** Text for the agent (an error message the agent can read when !ok). */
  readonly observation: string;
  readonly truncated: boolean;
  readonly latencyMs: number;
  readonly cacheHit: boolean;
  /** Document ids the observation came from (search hits, accessed page), for rewards and synthesis. */
  readonly documentIds: readonly string[];
}

/** Inputs of the built-in tools the text protocol maps to (DESIGN §3.7). */
export interface SearchToolInput {
  readonly query: string;
  readonly k?: number;
}
export interface AccessToolInput {
  readonly target: string;
  readonly page?: number;
}
export interface AnswerToolInput {
  readonly answer: string;
}

/** Description of a tool for prompts and JSON function calling. */
export interface ToolDescriptor {
  readonly name: string;
  readonly description: string;
  /** JSON schema of the input. */
  readonly inputSchema: Record<string, unknown>;
}

/**
 * A turn's tool runner in the agent worker, where calls run as local activities: `runsLocally` says
 * whether a call's tool declared itself cheap and on this machine for that input (a query of the
 * stack's own Postgres); a turn with any other call goes to the tools queue.
 */
export interface LocalToolRunner extends Pick<ToolActivities, 'runTools'> {
  runsLocally(call: ToolCall): boolean;
}

export interface ToolActivities {
  runTools(input: RunToolsInput): Promise<ToolResult[]>;
  describeTools(input: { names?: readonly string[] }): Promise<ToolDescriptor[]>;
}
