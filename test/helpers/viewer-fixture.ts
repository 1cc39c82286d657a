/** A run as the viewer reads it, written through the real sample-set writer: two recorded steps of a standard rollout. */
import fs from 'node:fs';
import path from 'node:path';
import { writeSampleSet } from '../../src/contracts/sample-set';
import { putJson, type BlobStore } from '../../src/store/blob-store';
import { names } from '../../src/store/run-names';
import type { RolloutRecord } from '../../src/contracts/rollout-record';
import type { Sample } from '../../src/domain/types';
import { loadTokenizer } from '../../src/model/tokenizer';

export const FIXTURE_RUN = 'viewer-api-run';

function sample(episode: number, group: string, reward: number, version: number, text: string, env = ''): Sample {
  const tok = loadTokenizer();
  const prompt = tok.encode('Compute: 17+25\n');
  const model = tok.encode(text);
  const envTokens = tok.encode(env);
  return {
    promptTokens: prompt,
    responseTokens: [...model, ...envTokens],
    logprobs: [...model.map((_, i) => -0.1 * (i + 1)), ...envTokens.map(() => 0)],
    lossMask: [...model.map(() => 1), ...envTokens.map(() => 0)],
    reward,
    metadata: { role: 'single', episodeId: `${FIXTURE_RUN}/r1/single-${episode}`, turn: 1, weightVersion: version, groupId: group },
  };
}

/**
 * Writes the run's metrics file (RL step 1), its saved state (RL started from global step 100) and
 * records at global steps 101 and 103 (RL steps 1 and 3; step 2's was never written); returns the
 * sample set's sha256.
 */
export async function writeViewerFixture(store: BlobStore, runsDir: string): Promise<string> {
  fs.mkdirSync(path.join(runsDir, FIXTURE_RUN), { recursive: true });
  fs.writeFileSync(path.join(runsDir, FIXTURE_RUN, 'metrics.jsonl'), `${JSON.stringify({ kind: 'rl', step: 1, meanReward: 0.5, accuracy: 0.5, loss: 0.1, seconds: { publish: 0, rollout: 1, train: 1 } })}\n`);
  const samples = [
    sample(0, 'r1-p0', 1, 3, '<calc>17+25</calc>', '\n<result>42</result>\n'),
    sample(1, 'r1-p0', 0, 2, 'ANSWER: 41'),
    sample(2, 'r1-p1', 1, 3, 'ANSWER: 7'),
    sample(3, 'r1-p1', 1, 3, 'ANSWER: 7'),
  ];
  const set = await writeSampleSet(store, 'single', samples);
  await store.setName(names.runState(FIXTURE_RUN), await putJson(store, { losses: [], evals: [], rlStart: { name: 'x', ref: set.ref, step: 100 } }, 'run-state'));
  for (const step of [101, 103]) {
    const record: RolloutRecord = {
      version: 1,
      runId: FIXTURE_RUN,
      step,
      policyVersion: 3,
      policyVersionKnown: true,
      objective: 'grpo',
      sets: [set],
      credit: [
        { advantage: 0.7071, status: 'trained' },
        { advantage: -0.7071, status: 'trained' },
        { advantage: 0, status: 'trained' },
        { advantage: 0, status: 'trained' },
      ],
      normAdvByStd: true,
      advantageNorm: 'episode',
    };
    await store.nameIfAbsent(names.rolloutRecord(FIXTURE_RUN, step), await putJson(store, record, 'rollout-record'));
  }
  return set.ref.sha256;
}
