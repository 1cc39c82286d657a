import { addBranch, buildForest, forestSummary, generatedTokens } from '../../src/tree';
import { step } from './helpers';

describe('forestSummary and generatedTokens', () => {
  it('counts per tree', () => {
    let f = buildForest(2, [3, 1]);
    f = step(f, 'r0.1', 'tool-call', { generatedTokens: 5 });
    f = step(f, 'r0.1.1', 'tool-call', { generatedTokens: 6 });
    f = step(f, 'r0.1.1.1', 'segment-length', { generatedTokens: 4 });
    f = step(f, 'r0.1.1.1.1', 'tool-limit', { generatedTokens: 3 });
    f = step(f, 'r0.2', 'length', { generatedTokens: 8 });
    f = step(f, 'r0.3', 'eos', { generatedTokens: 9 });
    f = addBranch(f, 'r0.1').forest;
    expect(forestSummary(f)).toEqual([
      { root: 'r0', nodes: 7, leaves: 3, open: 4, pending: 1, maxDepth: 4, toolCalls: 2, splits: 1, generatedTokens: 35, ends: { 'tool-limit': 1, length: 1, eos: 1 } },
      { root: 'r1', nodes: 1, leaves: 0, open: 1, pending: 1, maxDepth: 1, toolCalls: 0, splits: 0, generatedTokens: 0, ends: {} },
    ]);
    expect(generatedTokens(f)).toBe(35);
    expect(generatedTokens(f, 0)).toBe(35);
    expect(generatedTokens(f, 1)).toBe(0);
    // Small enough for a Temporal query: plain JSON that survives a round trip.
    expect(JSON.parse(JSON.stringify(forestSummary(f)))).toEqual(forestSummary(f));
  });
});
