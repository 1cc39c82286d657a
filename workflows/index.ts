/** Every workflow the orchestration worker registers. */
export { trainingRun } from './training-run/workflow';
export { planActEpisode, planActEpisodes } from './plan-act-episode';
export { planActRollout } from './plan-act-rollout';
export { singleAgentRollout } from './single-agent-rollout';
export { chatRollout } from './chat-rollout';
export { rolloutSession } from './rollout-session';
export { planActJob } from './plan-act-job/workflow';
export { treeRollout } from './tree-rollout';
export { agentRollout } from './agent-rollout';
export { horizonRollout } from './horizon-rollout';
export { horizonEpisode } from './horizon-episode';
export { jointEvaluation } from './joint-evaluation';
