/** The viewer's step and episode views on hand-made records: what they say of advantages, tree credit and trees. */
import type { RolloutRecord } from '../../src/contracts/rollout-record';
import type { Sample } from '../../src/domain/types';
import { loadTokenizer } from '../../src/model/tokenizer';
import { episodeView } from '../../src/viewer/episode-view';
import { groupTree, numberSamples, stepView } from '../../src/viewer/step-view';
import { tokenTexts } from '../../src/viewer/tokens';

const tok = loadTokenizer();
const links = { namespace: 'default' };

function sample(episodeId: string, role: Sample['metadata']['role'], reward: number, tokenAdvantages?: number[]): Sample {
  const response = tok.encode('ANSWER: 7');
  return {
    promptTokens: tok.encode('Compute: 3+4\n'),
    responseTokens: response,
    logprobs: response.map(() => -0.5),
    lossMask: response.map(() => 1),
    reward,
    ...(tokenAdvantages ? { tokenAdvantages: response.map((_, i) => tokenAdvantages[i % tokenAdvantages.length]!) } : {}),
    metadata: { role, episodeId, turn: 1, weightVersion: 2, groupId: 'g' },
  };
}

function record(objective: 'grpo' | 'rft', credit: RolloutRecord['credit']): RolloutRecord {
  return { version: 1, runId: 'run', step: 9, policyVersion: 2, policyVersionKnown: false, objective, sets: [], credit, normAdvByStd: true, advantageNorm: 'role' };
}

test('with per-role advantages, an episode row gives each role its own', () => {
  const samples = [sample('run/r1/e0', 'planner', 1), sample('run/r1/e0', 'actor', 1), sample('run/r1/e1', 'planner', 0), sample('run/r1/e1', 'actor', 0)];
  const rec = record('grpo', [
    { advantage: 0.5, status: 'trained' },
    { advantage: 0.7, status: 'trained' },
    { advantage: -0.5, status: 'trained' },
    { advantage: -0.7, status: 'trained' },
  ]);
  const view = stepView(rec, numberSamples(rec, samples), tok, { rlStep: 1, groupOffset: 0, groupLimit: 8, links });
  expect(view.groups[0]!.episodes.map((e) => e.advantageByRole)).toEqual([{ planner: 0.5, actor: 0.7 }, { planner: -0.5, actor: -0.7 }]);
  expect(view.shape).toBe('plan-act');
});

test('an RFT update does not show the tree credit it did not train', () => {
  const s = sample('run/tree-rollout-1/r0.1#0', 'actor', 1, [0.3, -0.2]);
  for (const [objective, shown] of [['grpo', true], ['rft', false]] as const) {
    const rec = record(objective, [{ advantage: 1, status: 'trained' }]);
    const view = episodeView(rec, s.metadata.episodeId, numberSamples(rec, [s]), tok, links);
    expect(view.samples[0]!.tokenAdvantages).toBe(shown);
    expect(view.samples[0]!.response.some((p) => p.a !== undefined)).toBe(shown);
  }
});

test('a tree is drawn from its outputs\' node paths, children in order', () => {
  const out = (treeNode: string, k: number) => ({ episodeId: `x/${treeNode}#${k}`, treeNode, reward: 1, advantage: 0 }) as Parameters<typeof groupTree>[0][number];
  const tree = groupTree([out('r0.2.1', 0), out('r0.10', 1), out('r0.2.1', 2), out('r0.1', 3)])!;
  expect(tree.id).toBe('r0');
  expect(tree.children.map((c) => c.id)).toEqual(['r0.1', 'r0.2', 'r0.10']);
  expect(tree.children[1]!.children[0]!.outputs.map((o) => o.episodeId)).toEqual(['x/r0.2.1#0', 'x/r0.2.1#2']);
});

test('a character split across byte-level tokens shows on the token that completes it', () => {
  const ids = tok.encode('é+ü');
  const texts = tokenTexts(tok, ids);
  expect(texts.join('')).toBe('é+ü');
  expect(texts).toHaveLength(ids.length);
});

test('a partial rollout\'s sample shows every version it ran on, and its staleness counts from the oldest', () => {
  const partial = { ...sample('run/r1/e0', 'actor', 1), metadata: { ...sample('run/r1/e0', 'actor', 1).metadata, weightVersion: 1, weightVersions: [1, 2] } };
  const rec = { ...record('grpo', [{ advantage: 0.5, status: 'trained' }]), policyVersion: 2 };
  const view = stepView(rec, numberSamples(rec, [partial]), tok, { rlStep: 1, groupOffset: 0, groupLimit: 8, links });
  expect(view.groups[0]!.episodes[0]).toMatchObject({ weightVersions: [1, 2], staleness: 1 });
  const episode = episodeView(rec, 'run/r1/e0', numberSamples(rec, [partial]), tok, links);
  expect(episode.samples[0]).toMatchObject({ weightVersion: 1, weightVersions: [1, 2], staleness: 1 });
});
