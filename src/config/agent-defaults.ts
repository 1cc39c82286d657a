/**
 * rollout.agent's defaults (src/config/schema.ts's AgentCommandSchema), in a module of their own so
 * workflow code can read them without importing the schema: every module of the workflow bundle runs
 * again at each new workflow's start, and building the run config's zod schema cost ~25 ms of CPU a
 * workflow, 14% of the orchestration worker's workflow thread at 1,024 Plan/Act episodes
 * (docs/benchmarks.md, "Where the orchestration CPU goes").
 */
export const AGENT_COMMAND_DEFAULTS = {
  /** The openai-client arithmetic agent (scripts/agent-episode.ts). */
  command: ['node', 'dist/scripts/agent-episode.js'] as readonly string[],
  timeoutSec: 120,
} as const;
