/** What the viewer's JSON API answers (assets/viewer/app.js draws these). */
import type { RlStepMetrics, EvalPoint, TestMetrics, BaselinePoint, RftStepMetrics } from '../report/run-metrics';
import type { SampleStatus } from '../contracts/rollout-record';
import type { AgentRole } from '../domain/types';
import type { RolloutShape } from './links';
import type { TokenPiece } from './tokens';
import type { MismatchKind, ToolCallProblem } from '../chat';

export interface Page {
  offset: number;
  limit: number;
  total: number;
}

export interface RunListItem {
  id: string;
  /** The metrics file's last change, ISO time. */
  modified: string;
}

export interface RunList {
  runs: RunListItem[];
  page: Page;
}

/** An RL update the store has a rollout record of, with its metrics line where the file has one. */
export interface StepListItem {
  /** Global step (the checkpoint's). */
  step: number;
  /** 1-based position among the run's recorded updates: the RL step. */
  rlStep: number;
  metrics?: RlStepMetrics;
}

/**
 * Where a run stands, from something that knows: its workflow's status on the Temporal server, else
 * the result file the main job writes when a run completes (<runs>/<id>.result.json). `unknown`: neither
 * answered (no server given or reachable, no result file); the page then neither says "live" nor stops following.
 */
export interface RunStatusView {
  state: 'running' | 'completed' | 'failed' | 'canceled' | 'terminated' | 'timed-out' | 'unknown';
  from: 'workflow' | 'result file' | 'none';
}

export interface RunView {
  id: string;
  status: RunStatusView;
  steps: StepListItem[];
  page: Page;
  /** RL steps in the metrics file (some may have no record: runs made before records were written). */
  rlSteps: number;
  evals: EvalPoint[];
  test: TestMetrics[];
  baselines: BaselinePoint[];
  rft: RftStepMetrics[];
  sftSteps: number;
  lastSftLoss?: number;
  /** The metrics file could not be read (the steps still list). */
  metricsError?: string;
  /** Runs whose names extend this one's (the baselines' own runs: <id>_rft, ...) that have records. */
  related: string[];
}

export interface EpisodeSummary {
  episodeId: string;
  reward: number;
  /** The advantage its samples were trained with (with rl.advantageNorm role, the first role's; see advantageByRole). */
  advantage: number;
  /** rl.advantageNorm role: each role's advantage, where the roles' differ. */
  advantageByRole?: Partial<Record<AgentRole, number>>;
  /** Samples (timelines) the episode trained as, and how many became training rows. */
  samples: number;
  trained: number;
  statuses: SampleStatus[];
  responseTokens: number;
  /** Response tokens with loss mask 1. */
  trainedTokens: number;
  /** Calculator calls the model wrote. */
  toolCalls: number;
  roles: AgentRole[];
  weightVersions: number[];
  /** Versions between the trained policy and the oldest weights that generated part of the episode. */
  staleness: number;
  shape: RolloutShape;
  workflowId?: string;
  workflowUrl?: string;
  /** Tree rollouts: the output's node (r0.2.1) and draw (#k). */
  treeNode?: string;
  /** Grid episodes: the plan horizon. */
  planHorizon?: number;
}

export interface TreeNodeView {
  id: string;
  children: TreeNodeView[];
  /** Episodes (outputs) that end at this node. */
  outputs: Array<{ episodeId: string; reward: number; advantage: number }>;
}

export interface GroupView {
  groupId: string;
  /** What the group's episodes were asked (the first sample's prompt, shortened). */
  prompt: string;
  meanReward: number;
  episodes: EpisodeSummary[];
  /** Tree rollouts: the group's tree, from its outputs' node paths. */
  tree?: TreeNodeView;
}

export interface StepView {
  runId: string;
  step: number;
  rlStep: number;
  policyVersion: number;
  policyVersionKnown: boolean;
  objective: 'grpo' | 'rft';
  shape: RolloutShape;
  /** A Plan/Act job's rollout that fell back to a single-agent rollout (its partner did not come). */
  fellBack: boolean;
  samples: number;
  episodes: number;
  groups: GroupView[];
  page: Page;
  metrics?: RlStepMetrics;
  /** Chat episodes: the step's full-render check counts (timelines.chat: mismatches by kind, unalignedModelIds). */
  chatCheck?: Record<string, number>;
}

export interface SampleView {
  index: number;
  role: AgentRole;
  turn: number;
  actId?: string;
  planHorizon?: number;
  chunkOffset?: number;
  /** The oldest weights that generated the sample; weightVersions lists them all when more than one (a partial rollout). */
  weightVersion: number;
  weightVersions?: number[];
  /** null: a partner job's sample (it counts its own weight versions). */
  staleness: number | null;
  reward: number;
  /** null: a partner job's sample (its own record has the advantage). */
  advantage: number | null;
  status: SampleStatus | 'partner';
  /** Dual mode: the other role's job, which trained this sample (this run's record holds only its own role). */
  partnerJob?: string;
  /** Per-token advantages (tree credit) are on the response pieces as `a`. */
  tokenAdvantages: boolean;
  prompt: TokenPiece[];
  response: TokenPiece[];
  /** Grid episodes: the observation's rows (A agent, G goal, # wall) read from the prompt. */
  grid?: string[];
  /** Chat episodes (task.chat) whose sample names its kept conversation: the sample as that conversation. */
  chat?: ChatView;
}

/**
 * A chat episode's sample as its conversation (src/viewer/chat-view.ts). Ids are numbered over the
 * whole conversation: those before promptLength are the sample's prompt pieces, the rest its
 * response pieces (response index = id index - promptLength), so the token colours and the hover
 * are the timeline's.
 */
export interface ChatView {
  /** task.chat's tokenizer the ids were decoded with, and its thinking switch. */
  tokenizer: string;
  enableThinking: boolean;
  promptLength: number;
  /** The ids in order: the first prompt, each model turn, each environment delta, with the messages each carries. */
  blocks: ChatBlockView[];
  /** Id ranges [start, end) inside `<think>` blocks (an unclosed one runs to the end). */
  thinking: Array<[number, number]>;
  /** The full-render check that set the sample's loss mask, as writeChatSamples ran it. */
  mismatches: MismatchView[];
  counts: Record<MismatchKind, number>;
  unalignedModelIds: number;
}

export interface ChatBlockView {
  /** prompt: the first render; model: a turn's ids as the engine returned them; env: a rendered delta (with a length-cut turn's closing id). */
  source: 'prompt' | 'env' | 'model';
  start: number;
  end: number;
  messages: ChatMessageView[];
  /** Model turns: their number (1-based) and the weights that generated them. */
  turn?: number;
  weightVersion?: number;
}

export interface ChatMessageView {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** Assistant turns: the thinking vLLM's reasoning parser read (null content: none). */
  reasoning?: string;
  /** Assistant turns: the tool calls as vLLM returns them (none at all when a block failed: vLLM's rule). */
  toolCalls?: Array<{ id?: string; name: string; arguments: string }>;
  /** Assistant turns: the tool-call blocks that failed, and calls of tools not offered. */
  malformed?: ToolCallProblem[];
  /** Tool results: the call answered (by tool_call_id, else by order). */
  answers?: { id?: string; name: string; arguments: string };
}

export interface MismatchView {
  kind: MismatchKind;
  /** [start, end) in the conversation's ids (an empty range: the full render has text the kept ids lack, before `start`). */
  kept: [number, number];
  keptText: string;
  expectedText: string;
  /** Model-written ids in the range. */
  modelIds: number;
  /** `text` mismatches: their model ids were masked out (loss mask 0), not trained. */
  masked: boolean;
}

/** An agent episode's call as the gateway recorded it (before merging into samples). */
export interface RecordedCallView {
  /** The activity attempt whose agent process made it (a retried episode records again under a new attempt). */
  attempt: number;
  /** Order the gateway served the attempt's calls in. */
  index: number;
  agent: string;
  tools: string;
  messages: Array<{ author: string; text: string; tokens: number }>;
}

export interface EpisodeView {
  runId: string;
  step: number;
  episodeId: string;
  summary: EpisodeSummary;
  samples: SampleView[];
  /** Agent episodes: the calls the gateway recorded, by attempt. */
  calls?: RecordedCallView[];
}
