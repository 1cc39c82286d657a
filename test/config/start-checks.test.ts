/**
 * Refusals that need no workflow run are made when the config is loaded (issue 36, item 5): a
 * starting policy (init.fromHf) the embedded policy cannot load, a served tokenizer that cannot
 * serve, and the keys trainingRun would ignore. The main job refuses them naming the field, before
 * any workflow starts; scripts/config-set.ts (the config check) refuses the files too.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseRunConfig } from '../../src/config/parse';
import { startProblems } from '../../src/config/start-checks';
import type { GptConfig } from '../../src/model/arch';
import { writeHfDir } from '../../src/model/hf-dir';
import { initWeights } from '../../src/model/init';
import { loadTokenizer } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';
import { killMainProcesses, startMain } from '../helpers/main-job';

const tok = loadTokenizer();
const model = { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 64 };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-start-checks-'));
/** An exported policy of `model`'s shape, and copies of it made wrong one way each. */
const good = path.join(tmp, 'good');
const copy = (name: string, change: (dir: string) => void): string => {
  const dir = path.join(tmp, name);
  fs.cpSync(good, dir, { recursive: true });
  change(dir);
  return dir;
};
const editJson = (file: string, edit: (j: Record<string, unknown>) => void) => {
  const j = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(j);
  fs.writeFileSync(file, JSON.stringify(j));
};
let qwen3: string;

beforeAll(() => {
  const cfg: GptConfig = { ...model, vocabSize: tok.vocabSize };
  writeHfDir(good, { config: cfg, weights: initWeights(cfg, 1), tokenizer: tok });
  qwen3 = copy('qwen3', (d) => editJson(path.join(d, 'config.json'), (j) => (j.model_type = 'qwen3')));
});

afterAll(() => {
  killMainProcesses();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const problems = (raw: Record<string, unknown>) => startProblems(parseRunConfig({ model, ...raw }), { workflow: 'trainingRun' });

describe('startProblems', () => {
  it('accepts a directory the policy loads, of the run\'s shape, with the project\'s tokenizer', () => {
    expect(problems({ init: { fromHf: good } })).toEqual([]);
    expect(problems({})).toEqual([]);
  });

  it('refuses init.fromHf naming the field: another model type, a missing directory, another shape, another tokenizer', () => {
    expect(problems({ init: { fromHf: qwen3 } })).toEqual([{ path: 'init.fromHf', message: 'config.json: model_type is "qwen3"; only gpt2 (GPT2LMHeadModel) maps onto the embedded policy' }]);
    expect(problems({ init: { fromHf: path.join(tmp, 'nowhere') } })).toEqual([{ path: 'init.fromHf', message: expect.stringContaining(`${path.join(tmp, 'nowhere')} has no config.json`) }]);
    expect(problems({ init: { fromHf: good }, model: { ...model, dModel: 64, dFf: 128 } })).toEqual([{ path: 'init.fromHf', message: `model.dModel is 64 here but 32 in ${good}; model.dFf is 128 here but 64 in ${good}` }]);
    const foreign = copy('foreign', (d) =>
      editJson(path.join(d, 'tokenizer.json'), (j) => {
        const vocab = (j.model as { vocab: Record<string, number> }).vocab;
        const [a, b] = Object.keys(vocab).filter((k) => k.length === 1).slice(0, 2) as [string, string];
        [vocab[a], vocab[b]] = [vocab[b]!, vocab[a]!];
      }),
    );
    expect(problems({ init: { fromHf: foreign } })).toEqual([{ path: 'init.fromHf', message: `${foreign}/tokenizer.json is not the project's tokenizer (assets/tokenizer.json), which the run's prompts and demonstrations are encoded with` }]);
    const broken = copy('broken-tokenizer', (d) => fs.writeFileSync(path.join(d, 'tokenizer.json'), '{}'));
    expect(problems({ init: { fromHf: broken } }).map((p) => p.path)).toEqual(['init.fromHf']);
  });

  it('refuses a served tokenizer that cannot serve, and the keys trainingRun ignores', () => {
    const openai = (tokenizer: string) => ({ inference: { engine: 'openai', openai: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'm', tokenizer } } });
    expect(problems(openai(path.join(REPO_ROOT, 'assets', 'tokenizer.json')))).toEqual([]);
    const missing = path.join(tmp, 'no-tokenizer.json');
    expect(problems(openai(missing))).toEqual([{ path: 'inference.openai.tokenizer', message: expect.stringMatching(new RegExp(`^${missing}: ENOENT.*\\(the Plan/Act protocol needs the served tokenizer to have its <\\|eos\\|> and <\\|pad\\|> tokens\\)$`)) }]);
    expect(problems({ rollout: { rolloutTimeoutSec: 60 } }).map((p) => p.path)).toEqual(['rollout.rolloutTimeoutSec']);
  });
});

describe('the main job and the config check', () => {
  const configFile = (raw: Record<string, unknown>): string => {
    const file = path.join(tmp, `config-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, JSON.stringify({ model, ...raw }));
    return file;
  };

  it('refuses init.fromHf with a directory the policy cannot load before any workflow starts, naming the field', async () => {
    const file = configFile({ init: { fromHf: qwen3 } });
    // An address nothing answers at: a refusal made after connecting would show as another error.
    const { code, out } = await startMain(['--config', file], { TEMPORAL_ADDRESS: '127.0.0.1:1', DURABLE_RL_RUNS: path.join(tmp, 'runs') }).exit;
    expect(out).toContain(`invalid config ${file}:\n  - init.fromHf: config.json: model_type is "qwen3"`);
    expect(out).not.toContain('workflow start');
    expect(code).toBe(2);
  }, 60_000);

  it('refuses the keys trainingRun would ignore before any workflow starts', async () => {
    const file = configFile({ rollout: { fallbackOnTimeout: false } });
    const { code, out } = await startMain(['--config', file], { TEMPORAL_ADDRESS: '127.0.0.1:1', DURABLE_RL_RUNS: path.join(tmp, 'runs') }).exit;
    expect(out).toContain(`invalid config ${file}:\n  - rollout.fallbackOnTimeout: it bounds a planActJob's rollouts`);
    expect(code).toBe(2);
  }, 60_000);

  it('scripts/config-set.ts refuses the directory too', () => {
    const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'scripts', 'config-set.js'), configFile({}), '--set', `init.fromHf=${qwen3}`], { encoding: 'utf8', cwd: REPO_ROOT });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('  - init.fromHf: config.json: model_type is "qwen3"');
  });
});
