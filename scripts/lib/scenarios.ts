/**
 * Small runs shared by the tests and the history recorder: real workflows and real activities,
 * sized to finish in seconds on two cores.
 */
import type { RunConfigInput } from '../../src/config/schema';

export function tinyRunConfig(overrides: Partial<RunConfigInput> = {}): RunConfigInput {
  return {
    experiment: 'test-tiny',
    seed: 7,
    task: { trainProblems: 40, evalProblems: 4 },
    model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 },
    sft: { steps: 4, batchSize: 4, stepsPerActivity: 2, warmupSteps: 1 },
    eval: { everySteps: 0, maxNewTokens: 12 },
    rollout: { maxTurns: 2 },
    timeouts: { heartbeatSec: 10 },
    ...overrides,
  };
}

export interface RecordedScenario {
  /** File name under test/histories (without .json). */
  name: string;
  workflowType: string;
  args: unknown[];
}

export const RECORDED_SCENARIOS: RecordedScenario[] = [
  { name: 'training-run-sft', workflowType: 'trainingRun', args: [tinyRunConfig({ eval: { everySteps: 2, maxNewTokens: 8 } })] },
];
