/** src/tree/segment.ts: how a node's generation ends its segment and what its children continue from. */
import { readSegment, segmentBudget, withToolOutcome, type SegmentLimits, type SegmentText } from '../../src/tree/segment';

const root: SegmentText = { context: 'Evaluate: 12+34\n', starts: [0], turnText: '', turnTokens: 0 };
const whole: SegmentLimits = { segmentTokens: 0, maxNewTokens: 16, maxToolCallsPerNode: 2 };
const cut: SegmentLimits = { ...whole, segmentTokens: 4 };

test('a tool call ends the segment and opens a new message for its result', () => {
  const r = readSegment(root, 0, { text: '<calc>12+34</calc>', finishReason: 'stop', responseTokens: 5 }, whole);
  expect(r).toMatchObject({ end: 'tool-call', call: { expression: '12+34' } });
  expect(r.text.context).toBe('Evaluate: 12+34\n<calc>12+34</calc>');
  expect(r.text.starts).toEqual([0, 16, 34]);
  expect(withToolOutcome(r.text, { value: '46' }).context).toBe('Evaluate: 12+34\n<calc>12+34</calc>\n<result>46</result>\n');
  expect(withToolOutcome(r.text, { error: 'bad input' }).context).toContain('bad input');
});

test('past the tool budget a call is a tool-limit leaf, with nothing to run', () => {
  const r = readSegment(root, 2, { text: '<calc>12+34</calc>', finishReason: 'stop', responseTokens: 5 }, whole);
  expect(r.end).toBe('tool-limit');
  expect(r.call).toBeUndefined();
});

test('EOS closes the turn; a stop without a parseable call is a bad tool call', () => {
  expect(readSegment(root, 0, { text: '46', finishReason: 'eos', responseTokens: 2 }, whole)).toMatchObject({ end: 'eos', text: { context: 'Evaluate: 12+34\n46<|eos|>' } });
  expect(readSegment(root, 0, { text: '46</calc>', finishReason: 'stop', responseTokens: 2 }, whole).end).toBe('bad-tool-call');
});

test('with segments, a cut inside the turn continues it; the turn budget ends it', () => {
  const first = readSegment(root, 0, { text: '<calc>12', finishReason: 'length', responseTokens: 4 }, cut);
  expect(first.end).toBe('segment-length');
  expect(first.text).toMatchObject({ turnText: '<calc>12', turnTokens: 4 });
  expect(segmentBudget(first.text, cut)).toBe(4);
  // The call began in the earlier segment: found in the whole turn, the context not doubled.
  const second = readSegment(first.text, 0, { text: '+34</calc>', finishReason: 'stop', responseTokens: 3 }, cut);
  expect(second).toMatchObject({ end: 'tool-call', call: { expression: '12+34' }, text: { context: 'Evaluate: 12+34\n<calc>12+34</calc>', turnTokens: 0 } });
  const spent = readSegment({ ...first.text, turnTokens: 12 }, 0, { text: 'xxxx', finishReason: 'length', responseTokens: 4 }, cut);
  expect(spent.end).toBe('length');
  expect(segmentBudget({ ...root, turnTokens: 14 }, cut)).toBe(2);
});
