import { ActorAnswerError, extractToolCall, parseActorAnswer } from '../../src/planact/actor-parser';

describe('extractToolCall', () => {
  it('finds a call that ends the generation', () => {
    expect(extractToolCall('<calc>17+25</calc>', 'stop')).toEqual({ expression: '17+25', text: '<calc>17+25</calc>' });
    expect(extractToolCall('let me see <calc> 2*3 </calc>', 'eos')).toEqual({ expression: '2*3', text: 'let me see <calc> 2*3 </calc>' });
  });

  it('restores a closing tag that an OpenAI-style server dropped with the stop string', () => {
    expect(extractToolCall('<calc>17+25', 'stop')).toEqual({ expression: '17+25', text: '<calc>17+25</calc>' });
    expect(extractToolCall('<calc>17+25', 'eos')).toBeNull();
    expect(extractToolCall('<calc>17+25<|eos|>', 'stop')).toBeNull();
  });

  it('returns null for final answers', () => {
    expect(extractToolCall('42', 'eos')).toBeNull();
    expect(extractToolCall('<calc>1+1</calc> then 2', 'eos')).toBeNull();
  });
});

describe('parseActorAnswer', () => {
  it('reads the text after the last tool result', () => {
    expect(parseActorAnswer('<calc>17+25</calc>\n<result>42</result>\n42<|eos|>')).toBe('42');
    expect(parseActorAnswer('<calc>1</calc>\n<result>1</result>\n<calc>1-8</calc>\n<result>-7</result>\n-7')).toBe('-7');
    expect(parseActorAnswer(' 42 ')).toBe('42');
  });

  it('rejects empty and non-integer answers with a code', () => {
    expect(() => parseActorAnswer('<calc>1+1</calc>\n<result>2</result>\n<|eos|>')).toThrow(ActorAnswerError);
    for (const [text, code] of [['', 'empty'], ['forty-two', 'not-an-integer'], ['4.2', 'not-an-integer'], ['<calc>1+1', 'not-an-integer']] as const) {
      try {
        parseActorAnswer(text);
        throw new Error('expected a failure');
      } catch (err) {
        expect((err as ActorAnswerError).code).toBe(code);
      }
    }
  });
});
