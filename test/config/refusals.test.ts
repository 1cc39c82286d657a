/**
 * The table of config refusals (src/config/refusals.ts), walked row by row: every row has a config
 * that triggers it (a list of examples, each parsed by the schema alone), and the error a user sees
 * for it names the row's key path.
 */
import { ConfigError } from '../../src/config/errors';
import { REFUSALS, AS_WRITTEN, refuseConfig, withGridDefaults, type ConfigConsumer, type Refusal, type RefusalContext } from '../../src/config/refusals';
import { parseRunConfig } from '../../src/config/parse';
import { checkRunConfig } from '../../src/config/load';
import { RunConfigSchema, type RunConfig } from '../../src/config/schema';

const openai = { engine: 'openai', openai: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'm' } };
const synced = { engine: 'openai', openai: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'm', weightSync: { dir: '/tmp/w' } } };
const gridBase = { task: { kind: 'grid' }, rollout: { kind: 'horizon' } };
const grid = (more: Record<string, unknown>) => ({ ...gridBase, ...more, task: { kind: 'grid', ...(more.task as object) }, rollout: { kind: 'horizon', ...(more.rollout as object) } });

/** Configs as written, each to trigger some rows; together, every row. */
const EXAMPLES: Array<Record<string, unknown>> = [
  { tree: { beamSize: 3 } },
  { rollout: { kind: 'tree' }, rl: { groupSize: 3 } },
  { rollout: { kind: 'standard', agent: { command: ['a'] } } },
  { inference: { engine: 'openai' } },
  { inference: { engine: 'embedded', openai: openai.openai } },
  { tree: { segmentTokens: 4096 } },
  { tree: { initialRollouts: [1, 2, 3] } },
  { rl: { advantageNorm: 'role' }, rollout: { mode: 'dual' } },
  { rollout: { kind: 'standard', plannerCredit: 'correct-results' } },
  { rollout: { kind: 'agent', batchRequests: false } },
  { rollout: { kind: 'agent', batchRequests: 'local' } },
  { rollout: { kind: 'tree', episodesPerWorkflow: 8 }, rl: { groupSize: 4 } },
  { task: { split: 'expression', rl: { testProblems: 4 } } },
  { rollout: { kind: 'tree' }, tree: { nodeSampling: 'entropy' }, inference: openai },
  { rollout: { kind: 'agent' }, rl: { temperature: 3 } },
  { task: { grid: {} } },
  { horizon: {} },
  { rollout: { kind: 'horizon' } },
  { task: { kind: 'grid' }, rollout: { kind: 'standard' } },
  grid({ task: { difficulty: { minTerms: 3, maxTerms: 3 }, demoToolUseRate: 0.5, extraDemonstrations: { difficulty: {}, problems: 2 }, rl: { evalProblems: 3 }, split: 'expression' } }),
  ...Object.keys(RunConfigSchema.parse({}).rollout)
    .filter((k) => k !== 'kind' && k !== 'mode')
    .map((k) => ({ key: k, value: JSON.stringify(RunConfigSchema.parse({}).rollout[k as keyof RunConfig['rollout']]) })),
  grid({ rollout: { mode: 'dual' } }),
  grid({ rl: { maxNewTokens: 3, dynamicSampling: { enabled: true } }, eval: { maxNewTokens: 3, passAtK: 4 }, timeline: { merge: false }, inference: openai }),
  grid({ task: { evalProblems: 200, grid: { rows: 3, cols: 3, walls: 0, testLayouts: 200 } } }),
  grid({ rl: { groupSize: 2 }, horizon: { groupBy: 'layout-horizon', actionHorizonsPattern: [5, 10] } }),
  grid({ rl: { groupSize: 4 }, horizon: { groupBy: 'layout-horizon', usePlanReward: true, actionHorizonsPattern: [5, 10] } }),
  grid({ model: { maxSeq: 16 } }),
  { trainer: { backend: 'tfjs', device: 'cuda', dtype: 'bfloat16', lora: { rank: 8 }, gradientCheckpointing: true } },
  { model: { arch: 'qwen3' } },
  { rl: { klLossCoef: 0.5, klLossType: 'mse', klRewardCoef: 0.5, klPenalty: 'mse', dynamicSampling: { maxBatchesPerStep: 7 }, async: { maxStaleness: 0, correction: 'tis', isCap: 3 } } },
  { rollout: { kind: 'tree' }, tree: { advantage: 'tree' }, rl: { normAdvByStd: false, advEpsilon: 0.1, useKlInReward: true } },
  { rl: { async: { maxStaleness: 1, correction: 'none', isCap: 3 } } },
  { timeline: { merge: false, compareBy: 'token', ignoreTools: false, fixRetokenizationDrift: false, snapDetection: true } },
  { compare: { sftBudget: { sequences: 8 } } },
  grid({ horizon: { planRewardCoef: 0.9, baseH: 3 } }),
  { rollout: { rolloutTimeoutSec: 60, barrierTimeoutSec: 60, fallbackOnTimeout: false } },
  { rl: { async: { maxStaleness: 1 } }, init: { fromHf: 'x' }, sft: { steps: 3 }, task: { trainProblems: 3, rl: { evalProblems: 3, testProblems: 3 } }, eval: { everySteps: 3, sampled: false, passAtK: 3 } },
  { rollout: { mode: 'dual' }, inference: { ...openai, openai: { ...openai.openai, tokenizer: 't' } } },
  { rollout: { kind: 'tree' }, rl: { dynamicSampling: { enabled: true } } },
  { rollout: { kind: 'agent' }, rl: { dynamicSampling: { enabled: true }, async: { maxStaleness: 1 } }, inference: synced },
  { rl: { steps: 0, dynamicSampling: { enabled: true } }, compare: { filteredSft: true, rft: true }, task: { kind: 'grid' }, inference: synced },
  { init: { fromRun: 'r' }, compare: { moreSft: true, filteredSft: true, rft: true }, task: { demoToolUseRate: 0.5, extraDemonstrations: { difficulty: {}, problems: 1 } }, rl: { dynamicSampling: { enabled: true } }, workflow: { continueAsNewEvery: 2 }, inference: synced },
  { model: { tokenizer: 'qwen3' } },
  { task: { chat: {} } },
  { task: { chat: { tokenizer: 'other' } }, model: { tokenizer: 'qwen3' } },
  { task: { kind: 'grid', chat: {} }, rollout: { kind: 'horizon' }, model: { tokenizer: 'qwen3', arch: 'qwen3' }, trainer: { backend: 'torch' } },
  { task: { chat: {} }, model: { tokenizer: 'qwen3', arch: 'qwen3' }, trainer: { backend: 'torch' }, rollout: { kind: 'standard' }, inference: { ...openai, openai: { ...openai.openai, tokenizer: 't' } } },
  { task: { chat: {} }, model: { tokenizer: 'qwen3', arch: 'qwen3' }, trainer: { backend: 'torch' }, rollout: { kind: 'standard' }, rl: { async: { maxStaleness: 1 } }, compare: { rft: true } },
  { task: { chat: {} }, model: { tokenizer: 'qwen3', arch: 'qwen3' }, trainer: { backend: 'torch' }, rollout: { kind: 'agent' } },
].map((e) => ('key' in e ? grid({ rollout: { [e.key as string]: flip(JSON.parse(e.value as string)) } }) : e));

/** A value of the same kind other than `v`. */
function flip(v: unknown): unknown {
  if (typeof v === 'boolean') return !v;
  if (typeof v === 'number') return v + 1;
  if (typeof v === 'string') return ({ outcome: 'correct-results', text: 'token' } as Record<string, string>)[v] ?? v;
  return v;
}

const CONTEXTS: RefusalContext[] = [
  {},
  { consumer: { workflow: 'trainingRun' } },
  { consumer: { workflow: 'trainingRun' }, agentOnServerRefused: true },
  ...(['planner', 'actor', 'shared'] as const).flatMap((role): RefusalContext[] => [{ consumer: { workflow: 'planActJob', role } }, { consumer: { workflow: 'planActJob', role, trains: true } }]),
];

/** The example configs, parsed by the schema alone (no refusal), with the grid's defaults filled in. */
const configs = EXAMPLES.map((raw) => {
  const parsed = RunConfigSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`example ${JSON.stringify(raw)} does not parse: ${parsed.error.message}`);
  return withGridDefaults(parsed.data);
});

const rows = REFUSALS.flatMap((section) => section.rows.map((row) => ({ section, row })));
const fits = (row: Refusal, ctx: RefusalContext) => row.appliesTo === (ctx.consumer?.workflow ?? 'both');

describe('the table of config refusals', () => {
  it.each(rows.map(({ section, row }, i) => [i, `${row.path} (${section.about})`, row] as const))('row %i, %s: some config triggers it, and its error names the path', (_i, _name, row) => {
    const hit = configs.flatMap((cfg) => CONTEXTS.filter((ctx) => fits(row, ctx) && row.when(cfg, ctx)).map((ctx) => ({ cfg, ctx })))[0];
    expect(hit).toBeDefined();
    const { cfg, ctx } = hit!;
    const message = typeof row.message === 'string' ? row.message : row.message(cfg, ctx);
    const section = REFUSALS.find((s) => s.rows.includes(row))!;
    const text = new ConfigError(section.source ?? 'input', [{ path: row.path, message }], section.render?.([{ path: row.path, message }])).message;
    expect(text).toContain(row.path);
  });

  it('every key of a file as written is refused by name', () => {
    for (const row of AS_WRITTEN) {
      expect(() => checkRunConfig({ compare: { sftBudget: { sequences: 8 } } }, 'f.yaml')).toThrow(new RegExp(`${row.path.replace('.', '\\.')}: ${row.message.replace(/[()]/g, '\\$&')}`));
    }
  });

  it('parseRunConfig and the consumer refusals reach the rows through refuseConfig', () => {
    expect(() => parseRunConfig({ rollout: { kind: 'tree' }, rl: { groupSize: 3 } })).toThrow(/rl\.groupSize: a tree rollout's GRPO group/);
    const dual = parseRunConfig({ rollout: { mode: 'dual' } });
    const trainingRun: ConfigConsumer = { workflow: 'trainingRun' };
    expect(() => refuseConfig(dual, 'workflow input', { consumer: trainingRun })).toThrow(/invalid config workflow input:\n {2}- rollout\.mode: trainingRun trains one shared policy/);
    // Left to workflow code for histories recorded before the table.
    expect(() => refuseConfig(dual, 'workflow input', { consumer: trainingRun, fromWorkflow: 'without' })).not.toThrow();
    const job = parseRunConfig({ compare: { moreSft: true }, workflow: { continueAsNewEvery: 2 } });
    expect(() => refuseConfig(job, 'planActJob input', { consumer: { workflow: 'planActJob', role: 'shared' } })).toThrow(
      /^invalid planActJob config: compare\.moreSft \(trainingRun only\); workflow\.continueAsNewEvery \(trainingRun only\)$/,
    );
    expect(() => refuseConfig(parseRunConfig({}), 'planActJob input', { consumer: { workflow: 'planActJob', role: 'planner' } })).toThrow(
      /^a planner job needs rollout\.kind: plan-act and rollout\.mode: dual; the config has kind plan-act, mode shared$/,
    );
  });
});
