/**
 * A Plan/Act episode's input as a rollout gives it, for tests that start episode workflows
 * themselves: both roles on one policy, small limits, and the timeouts a test can wait out.
 */
import { resolveLimits } from '../../src/planact/episode';
import type { PlanActEpisodeInput } from '../../src/contracts/plan-act-episode';
import { uniqueId } from './temporal';

export function planActEpisodeInput(expression: string, policy: PlanActEpisodeInput['policies']['planner'], overrides: Partial<PlanActEpisodeInput> = {}): PlanActEpisodeInput {
  return {
    runId: 'test-episodes',
    episodeId: uniqueId(`ep-${expression}`),
    expression,
    groupId: 'g0',
    policies: { planner: policy, actor: policy },
    limits: resolveLimits({ maxTurns: 4, maxActsPerTurn: 4, maxToolCallsPerAct: 2, plannerMaxNewTokens: 48, actorMaxNewTokens: 48 }),
    sampling: { temperature: 1, topP: 1 },
    timeouts: { generateSec: 60, trainSec: 600, toolSec: 10, heartbeatSec: 10 },
    ...overrides,
  };
}
