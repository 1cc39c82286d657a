/**
 * The torch worker (python/durable_rl_torch) serves the training activities under the TypeScript
 * contract (issue 37): the TypeScript types are the one source of truth, and this test holds the Python
 * side to them.
 *
 * - Names: the Python worker registers exactly createTrainingActivities' keys.
 * - Types: each activity's input type, read from activities/training.ts with the compiler API
 *   (test/helpers/ts-shapes.ts), against the dataclass contracts.py parses it into: the same fields,
 *   none required that TypeScript leaves optional, the same literal values. A field added on the
 *   TypeScript side alone fails here, whether or not a recording holds it.
 * - Payloads: recorded inputs of every training activity (test/histories), with the trainer section the
 *   proxies add for a torch run (workflows/activity-proxies.ts), through both workers' activities on
 *   copies of one blob store: both accept them; the outputs conform to the TypeScript output types,
 *   have the same keys and kinds (a torch checkpoint is kind hf-checkpoint where tfjs writes
 *   checkpoint; torch publishes hf weights where tfjs publishes onnx), and where both train the same
 *   step on the same data, the same numbers within a loose tolerance. No history records
 *   checkpointFromRun or checkpointFromHf (no recorded scenario starts from a run or a directory):
 *   their inputs are built from the training-run-async scenario's config as workflows/training-run/ (start.ts, rl-loop.ts)
 *   builds them. Every recorded input of every history parses on the torch worker.
 * - The strict parser refuses an unknown key at every level of every input, naming it.
 *
 * The blobs the recorded inputs reference are recreated by replaying the recordings' dataset and
 * policy activities on the TypeScript side under another run id (its results map the recorded refs to
 * the new ones); sample sets are written from the recorded counts, with the policy's own logprobs.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createDataActivities } from '../../activities/data';
import { createTrainingActivities, type TrainGrpoInput } from '../../activities/training';
import { pythonBin } from '../../scripts/lib/python-env';
import { RECORDED_SCENARIOS } from '../../scripts/lib/scenarios';
import { TORCH_PACKAGE_DIR } from '../../scripts/lib/torch-worker';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfigInput } from '../../src/config/schema';
import type { CheckpointInfo } from '../../src/contracts/weights';
import type { BlobRef, Sample } from '../../src/domain/types';
import { initTfBackend } from '../../src/model/backend';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { Gpt } from '../../src/model/gpt';
import { writeHfDir } from '../../src/model/hf-dir';
import { sequenceLogprobs } from '../../src/model/logprobs';
import { mulberry32 } from '../../src/domain/rng';
import { loadTokenizer } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';
import { putJson } from '../../src/store/blob-store';
import { FsBlobStore } from '../../src/store/fs-blob-store';
import { recordedActivities } from '../helpers/history';
import { nonConforming, shapeDifferences, shapeOf, typeProgram, type Shape } from '../helpers/ts-shapes';

const ACTIVITIES = ['initPolicy', 'trainSft', 'trainGrpo', 'checkpointFromRun', 'checkpointFromHf', 'publishWeights'] as const;
type Activity = (typeof ACTIVITIES)[number];
type Json = Record<string, unknown>;

/** Recorded inputs run through both workers: every activity, and the input shapes the histories hold. */
const PICKS: Array<{ history: string; activity: Activity; nth: number; why: string }> = [
  { history: 'training-run-async', activity: 'initPolicy', nth: 0, why: '' },
  { history: 'training-run-async', activity: 'trainSft', nth: 0, why: '' },
  { history: 'training-run-async', activity: 'trainGrpo', nth: 0, why: 'rl.async, policyVersion' },
  { history: 'training-run-async', activity: 'publishWeights', nth: 0, why: '' },
  { history: 'plan-act-batched', activity: 'trainGrpo', nth: 0, why: 'planner and actor sets, rl.microBatch' },
  { history: 'training-run-grpo', activity: 'trainGrpo', nth: 0, why: 'an rl section recorded before most keys' },
];
/** The pick whose rl section predates most keys (see its test). */
const OLD_RL_SECTION = 'training-run-grpo trainGrpo #0';
/** The scenario the unrecorded starts (init.fromRun, init.fromHf) are built from. */
const START_SCENARIO = 'training-run-async';

const historyDir = path.join(REPO_ROOT, 'test', 'histories');
const recorded = (name: string) => recordedActivities(historyFromJSON(JSON.parse(fs.readFileSync(path.join(historyDir, `${name}.json`), 'utf8'))));
const fixtureRunId = (runId: string) => `contract-fixture-${runId}`;
const isRef = (v: unknown): v is BlobRef => !!v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).sort().join() === 'bytes,kind,sha256';

interface Case {
  label: string;
  activity: Activity;
  input: Json;
  ts?: { ok?: Json; error?: string };
  py?: { ok?: Json; error?: { type: string; message: string } };
}

type PyAnswer = { ok?: unknown; error?: { type: string; message: string } };

function python(requests: object[]): PyAnswer[] {
  const out = execFileSync(pythonBin(), [path.join(REPO_ROOT, 'test', 'fixtures', 'torch_contract.py')], {
    input: JSON.stringify(requests),
    env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' },
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out.toString('utf8')) as PyAnswer[];
}

/** The run config of a recorded scenario, resolved as the workflow resolves it, with a torch trainer section. */
function scenarioConfig(name: string, extra: Partial<RunConfigInput> = {}) {
  const scenario = RECORDED_SCENARIOS.find((s) => s.name === name)!;
  return parseRunConfig({ ...(scenario.args[0] as RunConfigInput), ...extra });
}

// The trainer section a torch run's proxies add to every input that loads or makes a policy; cpu so
// both workers compute in float32 wherever the test runs.
const TRAINER = scenarioConfig(START_SCENARIO, { trainer: { backend: 'torch', device: 'cpu' } }).trainer!;
const withTrainer = (activity: string, input: Json): Json => (activity === 'publishWeights' ? input : { ...input, trainer: TRAINER });

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-torch-contract-'));
const env = new MockActivityEnvironment();
const cases: Case[] = [];
let pyAnswers: PyAnswer[] = [];
let pyNames: string[] = [];
let pyShapes: Record<string, Shape> = {};
let parsedRecorded: Array<{ label: string; answer: PyAnswer }> = [];
let probes: Array<{ label: string; where: string; answer: PyAnswer }> = [];

/** Recorded ref (sha256) -> the blob recreated for it in the fixture store. */
const refs = new Map<string, BlobRef>();

function remap<T>(value: T, what: string): T {
  if (isRef(value)) {
    const mine = refs.get(value.sha256);
    if (!mine) throw new Error(`${what}: the fixture has no blob for recorded ${value.kind} ${value.sha256}`);
    return mine as T;
  }
  if (Array.isArray(value)) return value.map((v) => remap(v, what)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, remap(v, what)])) as T;
  return value;
}

/** Pairs the refs of a recorded result with those of its replay, path by path. */
function pairRefs(old: unknown, mine: unknown): void {
  if (isRef(old) && isRef(mine)) refs.set(old.sha256, mine);
  else if (old && mine && typeof old === 'object' && typeof mine === 'object') {
    for (const [k, v] of Object.entries(old)) pairRefs(v, (mine as Json)[k]);
  }
}

/**
 * The sample sets of a recorded trainGrpo input, written anew: as many samples per set as recorded,
 * grouped as rl.promptsPerStep × rl.groupSize episodes with rewards varying inside each group, tool
 * text (loss mask 0) inside responses, and logprobs the policy's own, slightly perturbed (a behaviour
 * policy near the trained one, as a rollout's).
 */
async function writeSampleSets(store: FsBlobStore, input: TrainGrpoInput, seed: number): Promise<TrainGrpoInput['samples']> {
  const ckpt = decodeCheckpoint(await store.get(input.checkpoint.ref));
  const model = Gpt.fromWeights(ckpt.config, ckpt.weights);
  const rand = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const episodes = input.rl.promptsPerStep * input.rl.groupSize;
  try {
    return await Promise.all(
      input.samples.map(async (set) => {
        const rows = Array.from({ length: set.samples }, () => ({ prompt: Array.from({ length: int(5, 12) }, () => int(3, ckpt.config.vocabSize - 1)), response: Array.from({ length: int(4, 16) }, () => int(3, ckpt.config.vocabSize - 1)) }));
        const own = sequenceLogprobs(model, rows.map((r) => [...r.prompt, ...r.response]));
        const samples: Sample[] = rows.map((r, i) => {
          const ep = i % episodes;
          const lossMask = r.response.map((_, t) => (t >= 2 && t < 4 ? 0 : 1));
          return {
            promptTokens: r.prompt,
            responseTokens: r.response,
            logprobs: lossMask.map((m, t) => (m ? own[i]![r.prompt.length + t]! + (rand() - 0.5) * 0.2 : 0)),
            lossMask,
            reward: ep % 2,
            metadata: { role: set.role, episodeId: `e${ep}`, turn: Math.floor(i / episodes), weightVersion: input.policyVersion ?? 0, groupId: `g${Math.floor(ep / input.rl.groupSize)}` },
          };
        });
        const ref = await putJson(store, { samples }, set.ref.kind);
        const responseTokens = samples.reduce((a, s) => a + s.responseTokens.length, 0);
        const meanReward = samples.reduce((a, s) => a + s.reward, 0) / samples.length;
        // The recorded keys in the recorded order; only the numbers of the new blob change.
        return { ...set, ref, samples: samples.length, responseTokens, meanReward };
      }),
    );
  } finally {
    model.dispose();
  }
}

/** Every recorded training input of every history, with the trainer section where the proxies add it. */
function allRecordedInputs(): Array<{ label: string; activity: Activity; input: Json }> {
  return fs
    .readdirSync(historyDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .flatMap((f) =>
      recorded(f.replace(/\.json$/, ''))
        .filter((a) => (ACTIVITIES as readonly string[]).includes(a.type))
        .map((a, i) => ({ label: `${f} ${a.type} #${i}`, activity: a.type as Activity, input: withTrainer(a.type, a.input as Json) })),
    );
}

/** Every object path of an input (BlobRefs apart) with an extra key there. */
function probesOf(input: Json): Array<{ where: string; input: Json }> {
  const out: Array<{ where: string; input: Json }> = [];
  const visit = (v: unknown, where: string, set: (x: unknown) => Json) => {
    if (Array.isArray(v)) v.forEach((x, i) => visit(x, `${where}[${i}]`, (y) => set(v.map((z, j) => (j === i ? y : z)))));
    else if (v && typeof v === 'object' && !isRef(v)) {
      out.push({ where, input: set({ ...v, contractProbe: 1 }) });
      for (const [k, x] of Object.entries(v)) visit(x, `${where}.${k}`, (y) => set({ ...v, [k]: y }));
    }
  };
  visit(input, 'input', (x) => x as Json);
  return out;
}

beforeAll(async () => {
  await initTfBackend();
  const fixture = new FsBlobStore(path.join(tmp, 'fixture'));
  const data = createDataActivities({ store: fixture });
  const training = createTrainingActivities({ store: fixture });

  // The blobs the picks reference: each history's dataset and policy activities replayed under another run id.
  for (const history of [...new Set(PICKS.map((p) => p.history))]) {
    for (const a of recorded(history)) {
      if (a.type !== 'prepareSftDataset' && a.type !== 'initPolicy' && a.type !== 'trainSft') continue;
      const input = { ...remap(a.input as Json, `${history} ${a.type}`), runId: fixtureRunId((a.input as Json).runId as string) };
      const out = a.type === 'prepareSftDataset' ? await data.prepareSftDataset(input as never) : await env.run(training[a.type], input as never);
      pairRefs(a.result, out);
    }
  }
  for (const [i, pick] of PICKS.entries()) {
    const raw = recorded(pick.history).filter((a) => a.type === pick.activity)[pick.nth]!.input as Json;
    let input = pick.activity === 'trainGrpo' ? { ...raw, samples: [] } : raw;
    input = { ...remap(input, `${pick.history} ${pick.activity}`) };
    if (pick.activity === 'trainGrpo') input.samples = await writeSampleSets(fixture, { ...(input as unknown as TrainGrpoInput), samples: (raw as unknown as TrainGrpoInput).samples }, 100 + i);
    cases.push({ label: `${pick.history} ${pick.activity} #${pick.nth}${pick.why ? ` (${pick.why})` : ''}`, activity: pick.activity, input: withTrainer(pick.activity, input) });
  }

  // init.fromRun and init.fromHf, as workflows/training-run/start.ts schedules them for the scenario's config.
  const fromRun = fixtureRunId(`history-${START_SCENARIO}`);
  const runCfg = scenarioConfig(START_SCENARIO, { init: { fromRun, step: 2 } });
  cases.push({ label: 'checkpointFromRun (built from the scenario config)', activity: 'checkpointFromRun', input: withTrainer('checkpointFromRun', { runId: 'contract-from-run', fromRun: runCfg.init.fromRun, step: runCfg.init.step, model: runCfg.model }) });
  const step0 = (await fixture.getName(`runs/${fromRun}/ckpt/step-000000`))!;
  const ckpt = decodeCheckpoint(await fixture.get(step0));
  const dir = writeHfDir(path.join(tmp, 'hf-policy'), { config: ckpt.config, weights: ckpt.weights, tokenizer: loadTokenizer() });
  const hfCfg = scenarioConfig(START_SCENARIO, { init: { fromHf: dir } });
  cases.push({ label: 'checkpointFromHf (built from the scenario config)', activity: 'checkpointFromHf', input: withTrainer('checkpointFromHf', { runId: 'contract-from-hf', dir: hfCfg.init.fromHf, model: hfCfg.model }) });

  // Both workers on their own copy of the fixture, so neither finds the other's results.
  fs.cpSync(fixture.root, path.join(tmp, 'ts'), { recursive: true });
  fs.cpSync(fixture.root, path.join(tmp, 'py'), { recursive: true });
  // The probes go through the activities too (a parser that let one through would run it here).
  fs.cpSync(fixture.root, path.join(tmp, 'probe'), { recursive: true });
  const tsActs = createTrainingActivities({ store: new FsBlobStore(path.join(tmp, 'ts')) });
  for (const c of cases) {
    try {
      c.ts = { ok: await env.run(tsActs[c.activity] as unknown as (i: Json) => Promise<Json>, c.input) };
    } catch (err) {
      c.ts = { error: String(err) };
    }
  }

  const all = allRecordedInputs();
  const probeList = cases.flatMap((c) => probesOf(c.input).map((p) => ({ label: c.label, activity: c.activity, ...p })));
  const answers = python([
    { op: 'names' },
    { op: 'shapes' },
    ...all.map((r) => ({ op: 'parse', activity: r.activity, input: r.input })),
    ...cases.map((c) => ({ op: 'call', store: path.join(tmp, 'py'), activity: c.activity, input: c.input })),
    ...probeList.map((p) => ({ op: 'call', store: path.join(tmp, 'probe'), activity: p.activity, input: p.input })),
  ]);
  pyNames = answers[0]!.ok as string[];
  pyShapes = answers[1]!.ok as Record<string, Shape>;
  pyAnswers = answers.slice(2);
  parsedRecorded = all.map((r, i) => ({ label: r.label, answer: pyAnswers[i]! }));
  cases.forEach((c, i) => (c.py = pyAnswers[all.length + i] as Case['py']));
  probes = probeList.map((p, i) => ({ label: p.label, where: p.where, answer: pyAnswers[all.length + cases.length + i]! }));
}, 300_000);

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('the torch worker registers exactly the training activities of activities/training.ts', () => {
  const tsNames = Object.keys(createTrainingActivities({ store: new FsBlobStore(tmp) }));
  expect([...tsNames].sort()).toEqual([...ACTIVITIES].sort());
  expect([...pyNames].sort()).toEqual([...tsNames].sort());
});

describe('types', () => {
  const { checker, exports } = typeProgram('activities/training.ts');
  const acts = checker.getReturnTypeOfSignature(checker.getTypeOfSymbol(exports.get('createTrainingActivities')!).getCallSignatures()[0]!);
  const signature = (a: Activity) => checker.getTypeOfSymbol(checker.getPropertyOfType(acts, a)!).getCallSignatures()[0]!;
  const inputShape = (a: Activity) => shapeOf(checker, checker.getTypeOfSymbol(signature(a).getParameters()[0]!), `${a} input`);
  const outputShape = (a: Activity) => shapeOf(checker, checker.getAwaitedType(checker.getReturnTypeOfSignature(signature(a)))!, `${a} output`);

  test.each(ACTIVITIES)('%s: the dataclass contracts.py parses its input into has the TypeScript input type\'s fields, optionality and literals', (a) => {
    expect(shapeDifferences(inputShape(a), pyShapes[a]!)).toEqual([]);
  });

  test.each(ACTIVITIES.map((a) => [a]))('%s: both workers\' outputs conform to the TypeScript output type (numbers finite)', (a) => {
    const shape = outputShape(a);
    for (const c of cases.filter((x) => x.activity === a)) {
      expect({ case: c.label, ts: c.ts?.error ?? nonConforming(c.ts?.ok, shape, 'ts') }).toEqual({ case: c.label, ts: [] });
      expect({ case: c.label, py: c.py?.error ?? nonConforming(c.py?.ok, shape, 'py') }).toEqual({ case: c.label, py: [] });
    }
  });
});

test('every recorded input of every training activity, with a torch trainer section, parses on the torch worker', () => {
  expect(new Set(parsedRecorded.map((r) => r.label.split(' ')[1]))).toEqual(new Set(ACTIVITIES.filter((a) => a !== 'checkpointFromRun' && a !== 'checkpointFromHf')));
  expect(parsedRecorded.filter((r) => !('ok' in r.answer)).map((r) => `${r.label}: ${r.answer.error?.message}`)).toEqual([]);
});

/** Keys and kinds of a value, the leaves replaced by their typeof. */
function skeleton(v: unknown): unknown {
  if (Array.isArray(v)) return [...new Set(v.map((x) => JSON.stringify(skeleton(x))))].map((s) => JSON.parse(s) as unknown);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, skeleton(x)]));
  return typeof v;
}

/** Numbers of the same path that differ by more than loosely (timings and blob sizes apart). */
function numberDifferences(a: unknown, b: unknown, where: string, out: string[] = []): string[] {
  const key = where.split('.').at(-1)!;
  if (typeof a === 'number' && typeof b === 'number') {
    if (!['tokensPerSec', 'updateSeconds', 'bytes', 'paddedTokensRun'].includes(key) && Math.abs(a - b) > 1e-3 + 2e-2 * Math.abs(a)) out.push(`${where}: ts ${a}, py ${b}`);
  } else if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const [k, x] of Object.entries(a)) numberDifferences(x, (b as Json)[k], `${where}.${k}`, out);
  }
  return out;
}

describe('recorded inputs through both workers', () => {
  test('every training activity has a case', () => {
    expect(new Set(cases.map((c) => c.activity))).toEqual(new Set(ACTIVITIES));
  });

  test.each(PICKS.map((p) => [`${p.history} ${p.activity} #${p.nth}`]).concat([['checkpointFromRun'], ['checkpointFromHf']]))('%s', (label) => {
    const c = cases.find((x) => x.label.startsWith(label))!;
    expect({ ts: c.ts?.error, py: c.py?.error }).toEqual({ ts: undefined, py: undefined });
    const ts = c.ts!.ok!;
    const py = c.py!.ok!;
    if (c.activity === 'publishWeights') {
      // tfjs publishes an ONNX graph, torch a Hugging Face checkpoint (src/contracts/weights.ts WeightsInfo).
      const { hf, ...rest } = py;
      expect(isRef(ts.onnx) && isRef(hf) && py.onnx === undefined).toBe(true);
      expect(skeleton({ ...rest, onnx: hf })).toEqual(skeleton(ts));
      expect({ version: py.version, step: py.step }).toEqual({ version: ts.version, step: ts.step });
      return;
    }
    expect(skeleton(py)).toEqual(skeleton(ts));
    const tsCkpt = (c.activity.startsWith('checkpointFrom') ? ts : ts.checkpoint) as CheckpointInfo;
    const pyCkpt = (c.activity.startsWith('checkpointFrom') ? py : py.checkpoint) as CheckpointInfo;
    expect({ name: pyCkpt.name, step: pyCkpt.step }).toEqual({ name: tsCkpt.name, step: tsCkpt.step });
    expect(tsCkpt.ref.kind).toBe('checkpoint');
    // A copied tfjs checkpoint stays one; the torch worker writes Hugging Face checkpoints.
    expect(pyCkpt.ref.kind).toBe(c.activity === 'checkpointFromRun' ? 'checkpoint' : 'hf-checkpoint');
    if (label.startsWith(OLD_RL_SECTION)) {
      // Found by this test: the tfjs trainer reads an rl section recorded before ppoEpochs and
      // miniBatches as zero epochs (`epoch < undefined`) and trains nothing; the torch worker fills
      // the schema's defaults and trains one step. When tfjs fills them too, this exception goes.
      expect({ ts: ts.optimizerSteps, py: py.optimizerSteps }).toEqual({ ts: 0, py: 1 });
      return;
    }
    expect(numberDifferences(ts, py, c.activity)).toEqual([]);
  });
});

test('the strict parser refuses an unknown key at every level of every input, naming it', () => {
  expect(probes.length).toBeGreaterThan(cases.length * 2);
  const wrong = probes.filter((p) => p.answer.error?.type !== 'BadInputError' || !p.answer.error.message.includes(`${p.where} has keys the torch worker does not know: contractProbe`));
  expect(wrong.map((p) => `${p.label} ${p.where}: ${JSON.stringify(p.answer).slice(0, 300)}`)).toEqual([]);
});
