import { parsePlan, PlanParseError, type PlanParseErrorCode } from '../../src/planact/plan-parser';

function codeOf(text: string, opts?: Parameters<typeof parsePlan>[1]): PlanParseErrorCode | undefined {
  try {
    parsePlan(text, opts);
    return undefined;
  } catch (err) {
    if (err instanceof PlanParseError) return err.code;
    throw err;
  }
}

describe('parsePlan', () => {
  it('parses concurrent acts', () => {
    expect(parsePlan('ACT 1: 17+25\nACT 2: 8+31\n')).toEqual({
      kind: 'acts',
      acts: [{ id: '1', expression: '17+25' }, { id: '2', expression: '8+31' }],
    });
  });

  it('parses an answer', () => {
    expect(parsePlan('ANSWER: 81\n')).toEqual({ kind: 'answer', value: '81' });
    expect(parsePlan('ANSWER: -7')).toEqual({ kind: 'answer', value: '-7' });
  });

  it('tolerates a trailing EOS text, blank lines and surrounding spaces', () => {
    expect(parsePlan('\n  ACT 3: 42+39  \n\n<|eos|>')).toEqual({ kind: 'acts', acts: [{ id: '3', expression: '42+39' }] });
  });

  it.each<[string, PlanParseErrorCode]>([
    ['', 'empty'],
    [' \n\n ', 'empty'],
    ['<|eos|>', 'empty'],
    ['hello there', 'no-plan'],
    ['RESULT 1: 42', 'no-plan'],
    ['ACT 1 17+25', 'bad-act'],
    ['ACT x: 17+25', 'bad-act'],
    ['ACT 1:', 'bad-act'],
    ['ACT1: 17+25', 'bad-act'],
    ['ACTION 1: 2+2', 'bad-act'],
    ['ANSWER:', 'bad-answer'],
    ['ANSWER 81', 'bad-answer'],
    ['ANSWER: 1\nANSWER: 2', 'bad-answer'],
    ['ACT 1: 1+2\nACT 1: 3+4', 'duplicate-act-id'],
    ['ACT 1: 1+2\nANSWER: 3', 'mixed'],
    ['ACT 1: 1+2\nthen add them', 'stray-text'],
  ])('rejects %j with %s', (text, code) => {
    expect(codeOf(text)).toBe(code);
  });

  it('rejects too many acts and ids reused from earlier turns', () => {
    const three = 'ACT 1: 1+2\nACT 2: 3+4\nACT 3: 5+6\n';
    expect(codeOf(three, { maxActs: 2 })).toBe('too-many-acts');
    expect(codeOf(three, { maxActs: 3 })).toBeUndefined();
    expect(codeOf('ACT 2: 1+1', { usedIds: ['1', '2'] })).toBe('duplicate-act-id');
  });

  it('names what was wrong in the message', () => {
    expect(() => parsePlan('ACT 1: 1+2\nACT 2 3+4')).toThrow(/line 2 is not "ACT <id>: <expression>": "ACT 2 3\+4"/);
    try {
      parsePlan('ACT 1: 1+2\nACT 1: 3+4');
    } catch (err) {
      expect(err).toBeInstanceOf(PlanParseError);
      expect((err as PlanParseError).name).toBe('PlanParseError');
      expect((err as PlanParseError).line).toBe(2);
      expect((err as PlanParseError).message).toBe('line 2 reuses act id 1');
    }
  });
});
