/**
 * Where a config key is refused: this table, every row a key path, the workflows it applies to, the
 * condition and the message. No silent options: a key that would do nothing, or something other
 * than what it says, is refused here by name, with what would make it count.
 *
 * What is parsing, not refusal: the zod schema (src/config/schema.ts) refuses shapes and types
 * (unknown keys, wrong types, values out of range, not-yet-built keys) and the few rules inside one
 * object (task.difficulty's minimum <= maximum, model.dModel divisible by nHeads, init.step needs
 * init.fromRun, ...). Refusals that read files (init.fromHf's directory, a served tokenizer's) are
 * made where a config is loaded to start a run (src/config/start-checks.ts); everything else is here.
 *
 * Where the table is read (refuseConfig):
 *  - rows for `both` by parseRunConfig (src/config/parse.ts), so every config anywhere is checked;
 *    a config file's keys as written (AS_WRITTEN) by checkRunConfig (src/config/load.ts) first;
 *  - rows for one workflow by the config activities (activities/config.ts resolveRunConfig,
 *    activities/plan-act-jobs.ts loadJobConfig) for trainingRun and planActJob alike, and by the
 *    CLI before it starts one (src/config/start-checks.ts).
 * Workflow code refuses nothing itself. Rows marked `fromWorkflow` were checked in workflow code
 * before the `config-refusals-table` patch: histories recorded before it read them there, from this
 * table (docs/versioning.md).
 *
 * The table is a list of sections in the order they are checked. A section reports either its
 * first failing row (`first`: the rows of such a section assume the ones above passed), every
 * failing row (`all`), or every failing path once (`first-per-path`); the first section that fails
 * refuses the config. A new refusal is a row in the section it belongs to.
 */
import { assignHorizons } from '../horizon/assign';
import { GridLayoutError, heldOutLayouts, type HeldOutPart } from '../tasks/grid/layout';
import { differsFromDefault } from './defaults';
import { ConfigError } from './errors';
import { EvalSchema, GridTaskSchema, HorizonSchema, RlSchema, RolloutSchema, TaskSchema, TimelineSchema, TrainerSchema, TreeSchema, type RunConfig } from './schema';

export type JobRole = 'planner' | 'actor' | 'shared';

/** Which workflow a config is resolved for; a job's role, and whether it trains (absent: not known). */
export type ConfigConsumer = { workflow: 'trainingRun' } | { workflow: 'planActJob'; role: JobRole; trains?: boolean };

/** What a row may read besides the config. */
export interface RefusalContext {
  consumer?: ConfigConsumer;
  /** A trainingRun recorded before the agent-on-remote-server patch: agents on a server are refused (workflows/training-run/start.ts). */
  agentOnServerRefused?: boolean;
}

export interface Refusal {
  /** The dotted key the refusal names. */
  path: string;
  appliesTo: 'trainingRun' | 'planActJob' | 'both';
  /** Whether the config is refused. */
  when: (cfg: RunConfig, ctx: RefusalContext) => boolean;
  message: string | ((cfg: RunConfig, ctx: RefusalContext) => string);
}

export interface KeyProblem {
  path: string;
  message: string;
}

interface Section {
  about: string;
  report: 'first' | 'all' | 'first-per-path';
  /** Checked when a run or job starts only: a later execution (continue-as-new, --resume) carries the config its start accepted. */
  atStartOnly?: true;
  /** Checked in workflow code before the config-refusals-table patch. */
  fromWorkflow?: true;
  /** The error's text when not the usual `invalid config <source>:` list (messages users saw before the table). */
  render?: (problems: KeyProblem[]) => string;
  /** The source the error names, when not the config's (the message planActJob always gave). */
  source?: string;
  rows: Refusal[];
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const both = (path: string, when: Refusal['when'], message: Refusal['message']): Refusal => ({ path, appliesTo: 'both', when, message });
const forRun = (path: string, when: Refusal['when'], message: Refusal['message']): Refusal => ({ path, appliesTo: 'trainingRun', when, message });
const forJob = (path: string, when: Refusal['when'], message: Refusal['message']): Refusal => ({ path, appliesTo: 'planActJob', when, message });
const roleOf = (ctx: RefusalContext): JobRole | undefined => (ctx.consumer?.workflow === 'planActJob' ? ctx.consumer.role : undefined);
const grid = (cfg: RunConfig) => cfg.task.kind === 'grid';
const openai = (cfg: RunConfig) => cfg.inference.engine === 'openai';
const staleness = (cfg: RunConfig) => cfg.rl.async?.maxStaleness ?? 0;
/** Chat mode with both of its keys set (either alone is refused by its own row). */
const chatOn = (cfg: RunConfig) => cfg.task.chat !== undefined && cfg.model.tokenizer !== undefined;

/** Rows for `both` refusing each of `keys` set off its default where `active` is false. */
const onlyWith = (keys: string[], active: (cfg: RunConfig) => boolean, needs: string): Refusal[] =>
  keys.map((key) => both(key, (c) => differsFromDefault(c, key) && !active(c), `${needs}; leave it out or make it count`));
/** Rows for one workflow refusing each of `keys` set off its default. */
const ignoredBy = (workflow: 'trainingRun' | 'planActJob', keys: string[], message: string, also: (ctx: RefusalContext) => boolean = () => true): Refusal[] =>
  keys.map((key) => ({ path: key, appliesTo: workflow, when: (c, ctx) => also(ctx) && differsFromDefault(c, key), message }));

/** The error a grid's held-out layouts give when `count` of them (of `part`) do not exist. */
function missingLayouts(cfg: RunConfig, count: number, part: HeldOutPart | undefined): string | undefined {
  try {
    heldOutLayouts(cfg.seed, count, cfg.task.grid!, part);
    return undefined;
  } catch (err) {
    if (err instanceof GridLayoutError) return `${err.message}: ask for fewer, or make the grid larger`;
    throw err;
  }
}

/** Whether some layout of a layout-horizon group has fewer than 2 episodes at one H (the rollout's assignment). */
function thinHorizonGroups(cfg: RunConfig): boolean {
  const horizons = assignHorizons(cfg.horizon!.actionHorizonsPattern, cfg.rl.promptsPerStep * cfg.rl.groupSize);
  const counts = new Map<string, number>();
  horizons.forEach((h, i) => {
    const key = `${Math.floor(i / cfg.rl.groupSize)}:${h}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  return [...counts.values()].some((n) => n < 2);
}

const dynamicSampling = (kind: string, how: string) => `dynamic sampling draws more Plan/Act batches; a ${kind} rollout ${how}`;
const TREE_DEFAULTS = () => TreeSchema.parse({});
const TORCH_ONLY = ['device', 'dtype', 'lora', 'gradientCheckpointing'] as const;
const ARITH_ONLY = ['difficulty', 'demoToolUseRate', 'extraDemonstrations', 'rl', 'split'] as const;
/** Rollout keys horizon episodes do not read (rollout.kind itself has its own row). */
const PLAN_ACT_ONLY = Object.keys(RolloutSchema.parse({ kind: 'horizon' })).filter((k) => k !== 'kind') as Array<keyof RunConfig['rollout']>;

/**
 * trainingRun, planActJob and the rollout sessions take one run config; some keys mean something to
 * only one of them, and the other refuses them (when they differ from their defaults).
 */
const IGNORED_KEYS: Section = {
  about: 'keys the other workflow reads',
  report: 'all',
  atStartOnly: true,
  rows: [
    ...ignoredBy(
      'trainingRun',
      ['rollout.rolloutTimeoutSec', 'rollout.barrierTimeoutSec', 'rollout.fallbackOnTimeout'],
      "it bounds a planActJob's rollouts and its dual-mode barrier (docs/plan-act.md); trainingRun waits for each step's rollout, and a worker that dies mid-rollout is retried after timeouts.heartbeatSec",
    ),
    forJob('rl.async.maxStaleness', (c) => staleness(c) > 0, 'a job trains each rollout it took part in before its next one: its schedule is synchronous (asynchronous RL is trainingRun only)'),
    ...ignoredBy('planActJob', ['init.fromHf'], 'a job starts from weightsFromRun / weights in its input, or a fresh policy'),
    ...ignoredBy('planActJob', ['sft'], 'a job runs no SFT (trainingRun only); it starts from weightsFromRun'),
    ...ignoredBy('planActJob', ['task.trainProblems'], 'SFT demonstrations: trainingRun only'),
    ...ignoredBy('planActJob', ['task.rl.evalProblems', 'task.rl.testProblems'], "trainingRun's RL evaluations and test split; a job's own evaluations play task.evalProblems every eval.rlEverySteps rollouts"),
    ...ignoredBy('planActJob', ['eval.everySteps', 'eval.sampled', 'eval.passAtK'], "trainingRun's SFT, sampled and test evaluations; a job's own evaluations play task.evalProblems every eval.rlEverySteps rollouts"),
    ...ignoredBy('planActJob', ['rollout.barrierTimeoutSec'], 'a shared job plays both roles itself: there is no partner to wait for (dual mode only)', (ctx) => roleOf(ctx) === 'shared'),
  ],
};

export const REFUSALS: Section[] = [
  {
    about: 'keys of one rollout kind or inference engine, and settings that contradict each other',
    report: 'first',
    rows: [
      both('tree', (c) => c.rollout.kind !== 'tree' && !same(c.tree, TREE_DEFAULTS()), (c) => `the tree.* keys take effect with rollout.kind: tree (this config has rollout.kind: ${c.rollout.kind})`),
      both('rl.groupSize', (c) => c.rollout.kind === 'tree' && c.rl.groupSize !== c.tree.samplesPerRoot, (c) => `a tree rollout's GRPO group is its root's tree.samplesPerRoot outputs: set rl.groupSize to ${c.tree.samplesPerRoot} (it is ${c.rl.groupSize})`),
      both('rollout.agent', (c) => c.rollout.agent !== undefined && c.rollout.kind !== 'agent', (c) => `rollout.agent takes effect with rollout.kind: agent (this config has rollout.kind: ${c.rollout.kind})`),
      both('inference.openai', (c) => openai(c) && !c.inference.openai, 'inference.engine: openai needs inference.openai: { baseUrl, model }'),
      both('inference.openai', (c) => !openai(c) && c.inference.openai !== undefined, 'inference.openai takes effect with inference.engine: openai'),
      both('tree.segmentTokens', (c) => c.tree.segmentTokens >= c.rl.maxNewTokens, (c) => `segments of ${c.tree.segmentTokens} tokens never split a turn of at most rl.maxNewTokens = ${c.rl.maxNewTokens}: use a smaller value, or 0 for no split`),
      both('tree.initialRollouts', (c) => Array.isArray(c.tree.initialRollouts) && c.tree.initialRollouts.length !== c.rl.promptsPerStep, (c) => `one number per prompt: ${(c.tree.initialRollouts as number[]).length} given, rl.promptsPerStep is ${c.rl.promptsPerStep}`),
      both(
        'rl.advantageNorm',
        (c) => c.rl.advantageNorm === 'role' && !(c.rollout.kind === 'plan-act' && c.rollout.mode === 'shared'),
        (c) => `per-role normalisation changes advantages only where one batch holds both roles: rollout.kind plan-act in shared mode (this config has kind ${c.rollout.kind}, mode ${c.rollout.mode}; a dual-mode job trains one role already)`,
      ),
      both('rollout.plannerCredit', (c) => c.rollout.plannerCredit !== 'outcome' && c.rollout.kind !== 'plan-act', (c) => `planner credit applies to Plan/Act episodes (rollout.kind plan-act; this config has ${c.rollout.kind})`),
      both(
        'rollout.batchRequests',
        (c) => !c.rollout.batchRequests && c.rollout.kind === 'agent',
        "an outside agent's model calls reach the gateway over HTTP, not as activities, so there is nothing to send one by one (rollout.batchRequests applies to rollout.kind standard, plan-act, tree and horizon)",
      ),
      both(
        'rollout.batchRequests',
        (c) => c.rollout.batchRequests === 'local' && (c.task.chat !== undefined || !['standard', 'plan-act', 'tree'].includes(c.rollout.kind)),
        (c) =>
          `'local' calls are built for Plan/Act, standard and tree episodes' generate and calculator calls; this config's ${c.task.chat !== undefined ? 'chat episodes (task.chat) call chatTurn' : `rollout.kind ${c.rollout.kind} makes its calls otherwise`}: use true or false`,
      ),
      both('rollout.episodesPerWorkflow', (c) => c.rollout.episodesPerWorkflow !== undefined && c.rollout.kind !== 'plan-act', (c) => `episodes are grouped into child workflows only in Plan/Act rollouts (rollout.kind plan-act; this config has ${c.rollout.kind}, whose episodes share one workflow)`),
      both(
        'task.rl.testProblems',
        (c) => c.task.kind === 'arith' && c.task.split === 'expression' && c.task.rl.testProblems > 0,
        'with task.split expression, test and validation problems come from one held-out pool and may overlap; use task.split: subproblem, or task.rl.testProblems: 0',
      ),
      // OpenAI-compatible servers return no per-step entropy: every candidate would weigh the same.
      both(
        'tree.nodeSampling',
        (c) => c.rollout.kind === 'tree' && openai(c) && c.tree.nodeSampling === 'entropy',
        'entropy-weighted branch points need the per-token entropy that only the embedded engine reports (inference.engine is openai): set tree.nodeSampling: random',
      ),
      both('rl.temperature', (c) => c.rollout.kind === 'agent' && c.rl.temperature > 2, (c) => `an outside agent samples through the gateway, whose OpenAI API takes temperature up to 2 (it is ${c.rl.temperature})`),
    ],
  },
  {
    // The grid world's keys (task.grid, horizon.*, rollout.kind horizon) go together, and the keys of
    // the arithmetic task and of Plan/Act rollouts, which a grid run would ignore, are refused there.
    about: 'the grid world (task.kind: grid)',
    report: 'first',
    rows: [
      both('task.grid', (c) => !grid(c) && c.task.grid !== undefined, (c) => `task.grid takes effect with task.kind: grid (this config has task.kind: ${c.task.kind})`),
      both('horizon', (c) => !grid(c) && c.horizon !== undefined, (c) => `the horizon.* keys take effect with task.kind: grid (this config has task.kind: ${c.task.kind})`),
      both('rollout.kind', (c) => !grid(c) && c.rollout.kind === 'horizon', 'rollout.kind horizon runs the grid world: set task.kind: grid'),
      both('rollout.kind', (c) => grid(c) && c.rollout.kind !== 'horizon', (c) => `task.kind grid runs horizon episodes: set rollout.kind: horizon (it is ${c.rollout.kind})`),
      ...ARITH_ONLY.map((key) => both(`task.${key}`, (c) => grid(c) && !same(c.task[key], TaskSchema.parse({})[key]), `task.${key} belongs to the arithmetic task; task.kind grid does not use it`)),
      ...PLAN_ACT_ONLY.map((key) => both(`rollout.${key}`, (c) => grid(c) && !same(c.rollout[key], RolloutSchema.parse({ kind: 'horizon' })[key]), `rollout.${key} belongs to Plan/Act rollouts; horizon episodes do not use it`)),
      both('rl.maxNewTokens', (c) => grid(c) && c.rl.maxNewTokens !== RlSchema.parse({}).maxNewTokens, 'a grid plan is exactly H tokens (horizon.actionHorizonsPattern); rl.maxNewTokens does not apply'),
      both('rl.dynamicSampling.enabled', (c) => grid(c) && c.rl.dynamicSampling.enabled, 'dynamic sampling draws more Plan/Act batches; horizon rollouts do not support it'),
      both('eval.maxNewTokens', (c) => grid(c) && c.eval.maxNewTokens !== EvalSchema.parse({}).maxNewTokens, 'a grid plan is exactly H tokens; eval.maxNewTokens does not apply'),
      both('eval.passAtK', (c) => grid(c) && c.eval.passAtK !== EvalSchema.parse({}).passAtK, "pass@k samples arithmetic test problems; the grid world's test evaluation plays each held-out layout once per horizon"),
      // A plan is one generation per sample: there are no timelines to merge.
      both('timeline', (c) => grid(c) && !same(c.timeline, TimelineSchema.parse({})), 'timeline merging joins the calls of multi-call episodes; a grid plan is one generation, so task.kind grid does not use the timeline.* keys'),
      both('inference.engine', (c) => grid(c) && c.inference.engine !== 'embedded', 'the grid world runs on the embedded policy'),
      // The held-out layouts a run will play must exist in the numbers asked: otherwise it would fail
      // at its first evaluation or, for the test part, only after all its training. Small grids have few.
      both(
        'task.evalProblems',
        (c) => grid(c) && missingLayouts(c, c.task.evalProblems, c.task.grid!.testLayouts > 0 ? 'validation' : undefined) !== undefined,
        (c) => missingLayouts(c, c.task.evalProblems, c.task.grid!.testLayouts > 0 ? 'validation' : undefined)!,
      ),
      both('task.grid.testLayouts', (c) => grid(c) && c.task.grid!.testLayouts > 0 && missingLayouts(c, c.task.grid!.testLayouts, 'test') !== undefined, (c) => missingLayouts(c, c.task.grid!.testLayouts, 'test')!),
      both(
        'horizon.groupBy',
        (c) => grid(c) && c.horizon!.groupBy === 'layout-horizon' && thinHorizonGroups(c),
        (c) => `layout-horizon groups need at least 2 episodes of a layout at each H: raise rl.groupSize (${c.rl.groupSize}) to a multiple of 2 x the pattern's length`,
      ),
      // In a group of one H the plan reward multiplies every score by the same 1 + coef * H / baseH
      // (failures score 0 either way), and dividing by the group's std cancels that factor: the
      // advantages, and so the run, would be the same as without it.
      both(
        'horizon.usePlanReward',
        (c) => grid(c) && c.horizon!.groupBy === 'layout-horizon' && c.horizon!.usePlanReward && c.rl.normAdvByStd && !c.rl.useKlInReward,
        "with groupBy layout-horizon every group shares one H, so the plan reward scales all its scores by one factor, which GRPO's std normalisation cancels: it would change nothing. Use groupBy: layout (the design), or rl.normAdvByStd: false, where it weighs long-H groups more",
      ),
      // The observation (one token per cell and newline, ~16 more for the header) and the plan must fit.
      both(
        'model.maxSeq',
        (c) => grid(c) && gridTokens(c) > c.model.maxSeq,
        (c) => `a ${c.task.grid!.rows}x${c.task.grid!.cols} observation and a plan of ${Math.max(...c.horizon!.actionHorizonsPattern)} moves need about ${gridTokens(c)} tokens; model.maxSeq is ${c.model.maxSeq}`,
      ),
    ],
  },
  {
    // What only the torch trainer does is refused with the tfjs one, and a LoRA adapter where vLLM
    // cannot serve it. (The embedded engine serves every model.arch: src/model/llama-onnx.ts.)
    about: 'the trainer and the architecture (trainer.*, model.arch)',
    report: 'all',
    rows: [
      ...TORCH_ONLY.map((key) =>
        both(
          `trainer.${key}`,
          (c) => c.trainer !== undefined && (c.trainer.backend ?? 'tfjs') === 'tfjs' && !same(c.trainer[key], TrainerSchema.parse({})[key]),
          'it is a setting of the torch trainer, and trainer.backend is tfjs: set trainer.backend: torch, or leave it out',
        ),
      ),
      both('model.arch', (c) => (c.model.arch ?? 'gpt2') !== 'gpt2' && (c.trainer?.backend ?? 'tfjs') !== 'torch', (c) => `the tfjs trainer trains the embedded GPT-2 policy only; ${c.model.arch} needs trainer.backend: torch`),
      both('trainer.lora', (c) => c.trainer?.lora !== undefined && (c.model.arch ?? 'gpt2') === 'gpt2', "vLLM serves LoRA adapters of qwen3 and llama policies, not GPT-2's (model.arch is gpt2): set model.arch, or leave trainer.lora out"),
      both(
        'trainer.lora',
        (c) => c.trainer?.lora !== undefined && !(openai(c) && c.inference.openai?.weightSync !== undefined),
        'a LoRA adapter is served by vLLM (runtime LoRA loading); the embedded engine serves full weights: set inference.engine: openai with inference.openai.weightSync, or leave trainer.lora out',
      ),
    ],
  },
  {
    // docs/chat.md. What needs the files (the template's tool support) is checked where a config is
    // loaded to start a run (start-checks.ts).
    about: 'chat mode (task.chat, model.tokenizer)',
    report: 'all',
    rows: [
      both('model.tokenizer', (c) => c.model.tokenizer !== undefined && c.task.chat === undefined, "the Plan/Act text protocol needs the project's tokenizer (its <|eos|> token, the <calc> tags); another tokenizer plays chat episodes: set task.chat"),
      both('task.chat', (c) => c.task.chat !== undefined && c.model.tokenizer === undefined, "chat episodes are rendered with the policy's chat template: set model.tokenizer (e.g. qwen3, or a Hugging Face tokenizer directory)"),
      both('task.chat.tokenizer', (c) => chatOn(c) && c.task.chat!.tokenizer !== undefined && c.task.chat!.tokenizer !== c.model.tokenizer, (c) => `it is model.tokenizer's (${c.model.tokenizer}), filled in from it: leave it out`),
      both('model.tokenizer', (c) => chatOn(c) && (c.model.arch ?? 'gpt2') === 'gpt2', "the GPT-2 policy is the embedded one, whose vocabulary is the project tokenizer's (an untied head over a chat tokenizer's vocabulary is never what you want): set model.arch: qwen3 or llama"),
      both('task.chat', (c) => chatOn(c) && (c.trainer?.backend ?? 'tfjs') !== 'torch', 'the tfjs trainer trains the embedded GPT-2 policy over the project tokenizer only; chat mode needs trainer.backend: torch'),
      both('task.chat', (c) => chatOn(c) && c.task.kind !== 'arith', 'chat episodes are built for the arithmetic task (task.kind: arith); grid-world episodes are Plan/Act text'),
      both(
        'rollout.kind',
        (c) => chatOn(c) && c.rollout.kind !== 'standard' && c.rollout.kind !== 'agent',
        (c) => `chat episodes are built for rollout.kind: standard, and agent on a synced server, so far (this config has ${c.rollout.kind}); Plan/Act, tree and horizon episodes are Plan/Act text`,
      ),
      // An agent talks chat to a real model through the tools workers' recording proxy (activities/agents.ts
      // with a remote); the embedded engine's gateway renders the Plan/Act text protocol, not the chat template.
      both(
        'inference.engine',
        (c) => chatOn(c) && c.rollout.kind === 'agent' && !openai(c),
        "in chat mode an agent's episodes are played on the synced server through the recording proxy (inference.engine: openai with inference.openai.weightSync); the embedded engine's agent gateway speaks the Plan/Act text protocol, not the chat template",
      ),
      both('inference.openai.tokenizer', (c) => chatOn(c) && c.inference.openai?.tokenizer !== undefined, "in chat mode the served model's tokenizer is model.tokenizer (its tokenizer.json is the one the prompts are encoded with): leave it out"),
      both('rl.async.maxStaleness', (c) => chatOn(c) && staleness(c) > 0, 'chat episodes are played synchronously so far: leave rl.async out'),
      both('compare.rft', (c) => chatOn(c) && c.compare.rft, 'the RFT baseline plays Plan/Act episodes; not built for chat mode yet'),
    ],
  },
  {
    // A key set to its default cannot be told from one left out (src/config/defaults.ts), so only
    // values other than the default are refused.
    about: 'keys that only take effect when another setting turns them on',
    report: 'first-per-path',
    atStartOnly: true,
    rows: [
      ...onlyWith(['rl.klLossCoef', 'rl.klLossType'], (c) => c.rl.useKlLoss, 'it shapes the KL loss, which rl.useKlLoss turns on (it is false)'),
      ...onlyWith(['rl.klRewardCoef', 'rl.klPenalty'], (c) => c.rl.useKlInReward, 'it shapes the KL penalty in the reward, which rl.useKlInReward turns on (it is false)'),
      ...onlyWith(['rl.dynamicSampling.maxBatchesPerStep'], (c) => c.rl.dynamicSampling.enabled, 'it bounds dynamic sampling, which rl.dynamicSampling.enabled turns on (it is false)'),
      ...onlyWith(['rl.async.correction', 'rl.async.isCap'], (c) => staleness(c) > 0, 'it corrects for stale samples, and with rl.async.maxStaleness 0 the schedule is synchronous: there are none'),
      ...onlyWith(['rl.async.isCap'], (c) => c.rl.async?.correction !== 'none', 'it caps the importance weight of rl.async.correction decoupled or tis, and the correction is none'),
      // Tree credit gives every token its own advantage from the tree (src/tree/advantages.ts): the
      // group statistics and a KL penalty folded into the reward never reach the loss.
      ...onlyWith(['rl.normAdvByStd', 'rl.advEpsilon', 'rl.useKlInReward'], (c) => !(c.rollout.kind === 'tree' && c.tree.advantage === 'tree'), "with tree.advantage: tree each token takes its advantage from the tree, not from the group's rewards"),
      ...onlyWith(['horizon.planRewardCoef', 'horizon.baseH'], (c) => c.horizon?.usePlanReward === true, 'it scales the plan reward, which horizon.usePlanReward turns on (it is false)'),
      ...onlyWith(['timeline.compareBy', 'timeline.ignoreTools', 'timeline.fixRetokenizationDrift', 'timeline.snapDetection'], (c) => c.timeline.merge, 'it tunes timeline merging, and timeline.merge is false (one sample per call)'),
      ...onlyWith(['compare.sftBudget'], (c) => c.compare.moreSft || c.compare.filteredSft, 'it budgets the SFT baselines (compare.moreSft, compare.filteredSft), and neither is on'),
    ],
  },
  IGNORED_KEYS,
  {
    about: 'what trainingRun cannot run: dual mode, an unsynced server, a rollout kind\'s limits, baselines',
    report: 'first',
    fromWorkflow: true,
    rows: [
      forRun('rollout.mode', (c) => c.rollout.mode === 'dual', 'trainingRun trains one shared policy; dual mode runs as two planActJob workflows (docs/plan-act.md)'),
      forRun(
        'inference.openai.weightSync',
        (c) => openai(c) && c.inference.openai !== undefined && !c.inference.openai.weightSync,
        'trainingRun trains the policy it serves: a remote engine needs weightSync: { dir } so each step\'s weights reach the server (to play a fixed remote model, run planActJob with "train": false)',
      ),
      forRun('inference.openai.tokenizer', (c) => openai(c) && c.inference.openai?.tokenizer !== undefined, "a synced server serves this run's policy, whose tokenizer is the project's; leave inference.openai.tokenizer out"),
      // The rollout kinds' own limits (workflows/rollout-kinds.ts runs each kind). Horizon's (no
      // dynamic sampling, the embedded engine only) are the grid world's rows above.
      forRun('rl.dynamicSampling.enabled', (c) => c.rollout.kind === 'tree' && c.rl.dynamicSampling.enabled, dynamicSampling('tree', 'grows its groups by expansion instead (tree.*)')),
      forRun('rl.dynamicSampling.enabled', (c) => c.rollout.kind === 'agent' && c.rl.dynamicSampling.enabled, dynamicSampling('agent', 'plays one batch of problems per step')),
      forRun(
        'rollout.kind',
        (c, ctx) => c.rollout.kind === 'agent' && openai(c) && ctx.agentOnServerRefused === true,
        "agent episodes are served by the tools workers' gateway on the embedded engine; use inference.engine: embedded (npm run gateway -- --upstream records an agent on vLLM)",
      ),
      // Each episode is labelled with the one version the server served from its first call to its
      // last; asynchronous RL syncs the server while episodes are in flight, so they would straddle.
      forRun(
        'rl.async.maxStaleness',
        (c, ctx) => c.rollout.kind === 'agent' && openai(c) && !ctx.agentOnServerRefused && staleness(c) > 0,
        'an agent episode on a synced server must run on one weight version from its first call to its last, and asynchronous RL syncs the server while episodes are in flight (use maxStaleness 0, or inference.engine: embedded, whose gateways keep each version)',
      ),
      // (compare.moreSft without RL stays accepted and unused, as runs recorded before this check had it.)
      forRun('compare.filteredSft', (c) => c.compare.filteredSft && c.rl.steps === 0, 'the baselines are compared with RL: set rl.steps above 0'),
      forRun('compare.rft', (c) => c.compare.rft && c.rl.steps === 0, 'the baselines are compared with RL: set rl.steps above 0'),
      forRun('compare.filteredSft', (c) => c.compare.filteredSft && c.task.kind !== 'arith', 'filtered demonstrations are the arithmetic acts that call the calculator; the grid task has none'),
      forRun('compare.rft', (c) => c.compare.rft && c.rl.dynamicSampling.enabled, "RFT spends RL's rollout budget, one batch per step; with rl.dynamicSampling RL's budget varies by step"),
      forRun('compare.rft', (c) => c.compare.rft && openai(c), "RFT trains a second policy; a synced remote server serves only the run's own"),
    ],
  },
  {
    about: "planActJob's task",
    report: 'first',
    fromWorkflow: true,
    source: 'planActJob input',
    rows: [forJob('task.kind', (c) => c.task.kind !== 'arith', 'planActJob runs the arithmetic Plan/Act task; task.kind grid runs through trainingRun')],
  },
  {
    about: "trainingRun's keys that mean nothing to a job",
    report: 'all',
    fromWorkflow: true,
    render: (problems) => `invalid planActJob config: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`,
    rows: [
      forJob('init.fromRun', (c) => c.init?.fromRun !== undefined, '(a job takes weightsFromRun / fromStep)'),
      forJob('compare.moreSft', (c) => c.compare?.moreSft === true, '(trainingRun only)'),
      forJob('compare.filteredSft', (c) => c.compare?.filteredSft === true, '(trainingRun only)'),
      forJob('compare.rft', (c) => c.compare?.rft === true, '(trainingRun only)'),
      // Demonstrations are SFT's; a job has none to make.
      forJob('task.demoToolUseRate', (c) => c.task.demoToolUseRate !== undefined && c.task.demoToolUseRate !== 1, '(SFT demonstrations: trainingRun only)'),
      forJob('task.extraDemonstrations', (c) => Boolean(c.task.extraDemonstrations), '(SFT demonstrations: trainingRun only)'),
      forJob('rl.dynamicSampling', (c) => c.rl.dynamicSampling?.enabled === true, '(trainingRun only: a job trains on the rollout it took part in)'),
      forJob('workflow.continueAsNewEvery', (c) => (c.workflow?.continueAsNewEvery ?? 0) > 0, '(trainingRun only)'),
      forJob('inference.openai.weightSync', (c) => c.inference.openai?.weightSync !== undefined, '(trainingRun only: a job does not train a remote model)'),
    ],
  },
  {
    about: "a job's role and the rollout mode",
    report: 'first',
    fromWorkflow: true,
    render: (problems) => problems[0]!.message,
    rows: [
      forJob(
        'rollout.mode',
        (c, ctx) => c.rollout.kind !== 'plan-act' || c.rollout.mode !== (roleOf(ctx) === 'shared' ? 'shared' : 'dual'),
        (c, ctx) => `a ${roleOf(ctx)} job needs rollout.kind: plan-act and rollout.mode: ${roleOf(ctx) === 'shared' ? 'shared' : 'dual'}; the config has kind ${c.rollout.kind}, mode ${c.rollout.mode}`,
      ),
    ],
  },
  {
    about: 'a job that trains',
    report: 'first',
    fromWorkflow: true,
    render: (problems) => problems[0]!.message,
    rows: [
      forJob(
        'inference.engine',
        (c, ctx) => ctx.consumer?.workflow === 'planActJob' && ctx.consumer.trains === true && openai(c),
        'inference.engine: openai serves a remote model this job cannot train or publish; start the job with "train": false',
      ),
    ],
  },
];

function gridTokens(cfg: RunConfig): number {
  const { rows, cols } = cfg.task.grid!;
  return rows * cols + rows + 16 + Math.max(...cfg.horizon!.actionHorizonsPattern) + 1;
}

/**
 * Keys of a config file as written, refused before the schema fills in defaults: a parsed config
 * has compare.sftBudget's default, so only the file tells that it was asked for.
 */
export const AS_WRITTEN: Array<{ path: string; when: (raw: unknown) => boolean; message: string }> = [
  {
    path: 'compare.sftBudget',
    when: (raw) => {
      const compare = (raw as { compare?: Record<string, unknown> } | null)?.compare;
      return Boolean(compare && typeof compare === 'object' && compare.sftBudget !== undefined && compare.moreSft !== true && compare.filteredSft !== true);
    },
    message: 'it budgets the SFT baselines (compare.moreSft, compare.filteredSft), and neither is on in this config',
  },
];

/** Which rows refuseConfig reads. */
export interface RefusalScope extends RefusalContext {
  /** A later execution of a run: the sections checked at start only are skipped. */
  continued?: boolean;
  /** The sections once checked in workflow code: with the others (default), left out, or alone (a history recorded before the table). */
  fromWorkflow?: 'with' | 'without' | 'only';
}

/** Fills the grid world's task.grid and horizon with their defaults (its rows read them). */
export function withGridDefaults(cfg: RunConfig): RunConfig {
  if (cfg.task.kind === 'grid') {
    cfg.task.grid ??= GridTaskSchema.parse({});
    cfg.horizon ??= HorizonSchema.parse({});
  }
  return cfg;
}

/** The refusal of the first section that refuses `cfg`: its problems and the error text's form. */
export function firstRefusal(cfg: RunConfig, scope: RefusalScope = {}): { problems: KeyProblem[]; section: Section } | undefined {
  for (const section of REFUSALS) {
    if (scope.continued && section.atStartOnly) continue;
    const moved = section.fromWorkflow === true;
    if ((scope.fromWorkflow === 'without' && moved) || (scope.fromWorkflow === 'only' && !moved)) continue;
    const problems = sectionProblems(section, cfg, scope);
    if (problems.length > 0) return { problems, section };
  }
  return undefined;
}

/** The rows of `section` for ctx's workflow (none given: for both) that refuse `cfg`, as the section reports them. */
function sectionProblems(section: Section, cfg: RunConfig, ctx: RefusalContext): KeyProblem[] {
  const applies = ctx.consumer?.workflow ?? 'both';
  const problems: KeyProblem[] = [];
  for (const row of section.rows) {
    if (row.appliesTo !== applies || (section.report === 'first-per-path' && problems.some((p) => p.path === row.path)) || !row.when(cfg, ctx)) continue;
    problems.push({ path: row.path, message: typeof row.message === 'string' ? row.message : row.message(cfg, ctx) });
    if (section.report === 'first') break;
  }
  return problems;
}

/** The keys `consumer` would ignore (IGNORED_KEYS): what the other workflow reads. */
export function keysIgnoredBy(cfg: RunConfig, consumer: ConfigConsumer): KeyProblem[] {
  return sectionProblems(IGNORED_KEYS, cfg, { consumer });
}

/** Keys of a trainingRun's config that only planActJob and its rollout sessions read. */
export const keysTrainingRunIgnores = (cfg: RunConfig): KeyProblem[] => keysIgnoredBy(cfg, { workflow: 'trainingRun' });

/** Keys of a planActJob's config that only trainingRun reads (SFT, its evaluations and test split, asynchronous RL). */
export const keysPlanActJobIgnores = (cfg: RunConfig, role: JobRole): KeyProblem[] => keysIgnoredBy(cfg, { workflow: 'planActJob', role });

/** Throws the ConfigError of the first section that refuses `cfg` (`source` names the config). */
export function refuseConfig(cfg: RunConfig, source: string, scope: RefusalScope = {}): void {
  const refusal = firstRefusal(cfg, scope);
  if (!refusal) return;
  const { problems, section } = refusal;
  throw new ConfigError(section.source ?? source, problems, section.render?.(problems));
}

/** Throws the ConfigError of the first key of a config file as written that nothing would read. */
export function refuseAsWritten(raw: unknown, source: string): void {
  const row = AS_WRITTEN.find((r) => r.when(raw));
  if (row) throw new ConfigError(source, [{ path: row.path, message: row.message }]);
}
