/**
 * What the remote engine reads from each server, on their answers as files: vLLM's recorded from a
 * real server (test/fixtures/remote-engines/vllm-completions.json says how), SGLang's built from its
 * protocol source (SGLang does not run on CPU machines; the file names the commit). Token ids are
 * the project tokenizer's, as the served export's are.
 */
import fs from 'node:fs';
import path from 'node:path';
import { classifyError, errorMessage, readChoice, RemoteEngineRequestError, RemoteEngineUnavailableError, type CompletionChoiceBody } from '../../src/engine/openai-engine';
import { loadTokenizer } from '../../src/model/tokenizer';

interface Answer {
  status: number;
  body: { choices?: CompletionChoiceBody[] } & Record<string, unknown>;
}
interface Fixture {
  eosId: number;
  promptIds: number[];
  stopString: Answer;
  eos: Answer;
  length: Answer;
  unknownModel: Answer;
  contextOverflow: Answer;
  abort?: Answer;
}

const tok = loadTokenizer();
const load = (name: string): Fixture => JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'remote-engines', name), 'utf8')) as Fixture;

describe.each([
  ['vLLM (recorded)', 'vllm-completions.json'],
  ['SGLang (from its protocol)', 'sglang-completions.json'],
])('%s', (_server, file) => {
  const f = load(file);
  const read = (a: Answer) => readChoice(a.body.choices![0]!, f.promptIds, tok, 'server');

  it('the files use the project tokenizer', () => {
    expect(f.eosId).toBe(tok.eosId);
  });

  it('a stop string is a stop, kept in the text and ids', () => {
    const c = read(f.stopString);
    expect(c.finishReason).toBe('stop');
    expect(c.text.endsWith('</calc>')).toBe(true);
    expect(c.tokenIds).toEqual(f.stopString.body.choices![0]!.token_ids);
    expect(c.logprobs).toEqual(f.stopString.body.choices![0]!.logprobs!.token_logprobs);
  });

  it('EOS is an eos: the id kept, the text without it', () => {
    const c = read(f.eos);
    expect(c.finishReason).toBe('eos');
    expect(c.tokenIds.at(-1)).toBe(tok.eosId);
    expect(c.text).not.toContain(tok.eosToken);
  });

  it('length is length', () => {
    expect(read(f.length).finishReason).toBe('length');
  });

  it('an unknown model and a context overflow are typed, non-retryable problems with the server message', () => {
    const unknown = classifyError(f.unknownModel.status, errorMessage(f.unknownModel.body)!, 'server');
    expect(unknown).toBeInstanceOf(RemoteEngineRequestError);
    expect(unknown).toMatchObject({ problem: 'unknown-model', message: expect.stringContaining('`nope` does not exist') });
    const overflow = classifyError(f.contextOverflow.status, errorMessage(f.contextOverflow.body)!, 'server');
    expect(overflow).toMatchObject({ problem: 'context-overflow', status: 400 });
  });

  if (f.abort) {
    it('an aborted request is retryable', () => {
      expect(() => read(f.abort!)).toThrow(RemoteEngineUnavailableError);
    });
  }
});

describe('answers the engine refuses to guess at', () => {
  const base: CompletionChoiceBody = { text: 'x', finish_reason: 'length', token_ids: [55], logprobs: { token_logprobs: [-1] } };
  it('no token ids, no logprobs or a re-tokenized prompt are server-configuration errors naming the setting', () => {
    const problem = (c: CompletionChoiceBody): unknown => {
      try {
        readChoice(c, [1, 2], tok, 'server');
      } catch (err) {
        return err;
      }
      return undefined;
    };
    expect(problem({ ...base, token_ids: null })).toMatchObject({ problem: 'server-config', message: expect.stringMatching(/no token ids.*return_token_ids/) });
    expect(problem({ ...base, logprobs: null })).toMatchObject({ problem: 'server-config', message: expect.stringMatching(/no logprobs/) });
    expect(problem({ ...base, logprobs: { token_logprobs: [null] } })).toMatchObject({ problem: 'server-config' });
    expect(problem({ ...base, prompt_token_ids: [9, 1, 2] })).toMatchObject({ problem: 'server-config', message: expect.stringMatching(/BOS/) });
  });

  it('5xx, 429 and 408 are retryable; other 4xx are not', () => {
    expect(classifyError(503, 'overloaded', 's')).toBeInstanceOf(RemoteEngineUnavailableError);
    expect(classifyError(429, 'slow down', 's')).toBeInstanceOf(RemoteEngineUnavailableError);
    expect(classifyError(408, 'timeout', 's')).toBeInstanceOf(RemoteEngineUnavailableError);
    expect(classifyError(422, 'temperature: must be >= 0', 's')).toMatchObject({ problem: 'bad-request' });
  });

  it('reads every error body shape: vLLM nested, SGLang flat, FastAPI detail', () => {
    expect(errorMessage({ error: { message: 'a' } })).toBe('a');
    expect(errorMessage({ object: 'error', message: 'b', type: 'BadRequestError', code: 400 })).toBe('b');
    expect(errorMessage({ detail: 'c' })).toBe('c');
    expect(errorMessage({ detail: [{ loc: ['body', 'x'], msg: 'd' }] })).toContain('"msg":"d"');
    expect(errorMessage('plain')).toBeUndefined();
  });
});
