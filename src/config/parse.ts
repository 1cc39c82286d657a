import { inactiveKeys } from './dependent-keys';
import { checkGrid } from './grid-checks';
import { chatProblems, withChatTokenizer } from './chat-checks';
import { trainerProblems } from './trainer-checks';
import { RunConfigSchema, TreeSchema, type RunConfig } from './schema';
import { ConfigError } from './errors';

/**
 * Validates a plain object (already read from JSON/YAML or a workflow input). `refuseUnread: false`
 * leaves out the refusal of keys that count only with a switch on (src/config/dependent-keys.ts), for
 * configs accepted before it: a run's carried config, and histories that parse in the workflow.
 */
export function parseRunConfig(raw: unknown, source = 'input', opts: { refuseUnread?: boolean } = {}): RunConfig {
  const result = RunConfigSchema.safeParse(raw ?? {});
  if (result.success) {
    // No silent options: tree.* settings other than the defaults only mean something to tree rollouts.
    if (result.data.rollout.kind !== 'tree' && JSON.stringify(result.data.tree) !== JSON.stringify(TreeSchema.parse({}))) {
      throw new ConfigError(source, [{ path: 'tree', message: `the tree.* keys take effect with rollout.kind: tree (this config has rollout.kind: ${result.data.rollout.kind})` }]);
    }
    if (result.data.rollout.kind === 'tree' && result.data.rl.groupSize !== result.data.tree.samplesPerRoot) {
      throw new ConfigError(source, [{ path: 'rl.groupSize', message: `a tree rollout's GRPO group is its root's tree.samplesPerRoot outputs: set rl.groupSize to ${result.data.tree.samplesPerRoot} (it is ${result.data.rl.groupSize})` }]);
    }
    if (result.data.rollout.agent && result.data.rollout.kind !== 'agent') {
      throw new ConfigError(source, [{ path: 'rollout.agent', message: `rollout.agent takes effect with rollout.kind: agent (this config has rollout.kind: ${result.data.rollout.kind})` }]);
    }
    const { engine, openai } = result.data.inference;
    if (engine === 'openai' && !openai) throw new ConfigError(source, [{ path: 'inference.openai', message: 'inference.engine: openai needs inference.openai: { baseUrl, model }' }]);
    if (engine !== 'openai' && openai) throw new ConfigError(source, [{ path: 'inference.openai', message: 'inference.openai takes effect with inference.engine: openai' }]);
    const { segmentTokens } = result.data.tree;
    if (segmentTokens >= result.data.rl.maxNewTokens) {
      throw new ConfigError(source, [{ path: 'tree.segmentTokens', message: `segments of ${segmentTokens} tokens never split a turn of at most rl.maxNewTokens = ${result.data.rl.maxNewTokens}: use a smaller value, or 0 for no split` }]);
    }
    const initial = result.data.tree.initialRollouts;
    if (Array.isArray(initial) && initial.length !== result.data.rl.promptsPerStep) {
      throw new ConfigError(source, [{ path: 'tree.initialRollouts', message: `one number per prompt: ${initial.length} given, rl.promptsPerStep is ${result.data.rl.promptsPerStep}` }]);
    }
    const d = result.data;
    const planActShared = d.rollout.kind === 'plan-act' && d.rollout.mode === 'shared';
    if (d.rl.advantageNorm === 'role' && !planActShared) {
      throw new ConfigError(source, [{ path: 'rl.advantageNorm', message: `per-role normalisation changes advantages only where one batch holds both roles: rollout.kind plan-act in shared mode (this config has kind ${d.rollout.kind}, mode ${d.rollout.mode}; a dual-mode job trains one role already)` }]);
    }
    if (d.rollout.plannerCredit !== 'outcome' && d.rollout.kind !== 'plan-act') {
      throw new ConfigError(source, [{ path: 'rollout.plannerCredit', message: `planner credit applies to Plan/Act episodes (rollout.kind plan-act; this config has ${d.rollout.kind})` }]);
    }
    if (!d.rollout.batchRequests && d.rollout.kind === 'agent') {
      throw new ConfigError(source, [{ path: 'rollout.batchRequests', message: "an outside agent's model calls reach the gateway over HTTP, not as activities, so there is nothing to send one by one (rollout.batchRequests applies to rollout.kind standard, plan-act, tree and horizon)" }]);
    }
    if (d.task.kind === 'arith' && d.task.split === 'expression' && d.task.rl.testProblems > 0) {
      throw new ConfigError(source, [{ path: 'task.rl.testProblems', message: 'with task.split expression, test and validation problems come from one held-out pool and may overlap; use task.split: subproblem, or task.rl.testProblems: 0' }]);
    }
    if (d.rollout.kind === 'tree' && d.inference.engine === 'openai' && d.tree.nodeSampling === 'entropy') {
      // OpenAI-compatible servers return no per-step entropy: every candidate would weigh the same.
      throw new ConfigError(source, [{ path: 'tree.nodeSampling', message: 'entropy-weighted branch points need the per-token entropy that only the embedded engine reports (inference.engine is openai): set tree.nodeSampling: random' }]);
    }
    if (d.rollout.kind === 'agent' && d.rl.temperature > 2) {
      throw new ConfigError(source, [{ path: 'rl.temperature', message: `an outside agent samples through the gateway, whose OpenAI API takes temperature up to 2 (it is ${d.rl.temperature})` }]);
    }
    checkGrid(d, source);
    const trainer = trainerProblems(d);
    if (trainer.length > 0) throw new ConfigError(source, trainer);
    const chat = chatProblems(d);
    if (chat.length > 0) throw new ConfigError(source, chat);
    const inactive = opts.refuseUnread === false ? [] : inactiveKeys(d);
    if (inactive.length > 0) throw new ConfigError(source, inactive);
    return withChatTokenizer(d);
  }
  throw new ConfigError(
    source,
    result.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message })),
  );
}
