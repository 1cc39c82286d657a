/**
 * The chat agent (src/gateway/arith-agent.ts in its chat format, what rollout.kind agent runs on a
 * synced server) plays the episode chat SFT taught (src/tasks/arith/chat-sft.ts). Its requests go to
 * a stand-in for vLLM's chat endpoint built from the project's own parts: the request rendered by the
 * model's chat template as vLLM renders it (src/chat asVllmRenders, the request's tools and
 * chat_template_kwargs) and tokenized, the model's turns read as vLLM's hermes (and qwen3 reasoning)
 * parsers read them. The model's turns are a demonstration's.
 *
 *  - The first request renders to exactly the ids a demonstration's first prompt is, with thinking
 *    off and on (the same messages, the same tools, the same enable_thinking).
 *  - The tool message is the demonstration's (`String(value)`), and the second request differs from
 *    the demonstration only where Qwen3's template rewrites history (the earlier turn's empty think block).
 *  - The answer formats a policy may learn score as the chat evaluation scores them (the episode
 *    driver playChatEpisode), through the reward trainingRun gives an agent's answer in chat mode.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { asVllmRenders, formatHermesToolCalls, loadChatModel, parseModelTurn, type ChatMessage, type ChatModel, type ToolSpec } from '../../src/chat';
import { chatConversationOptions } from '../../activities/chat-episodes';
import { solveArithmetic } from '../../src/gateway/arith-agent';
import { agentAnswerReward, calc, CALC_TOOL_NAME, chatDemonstration, playChatEpisode, problemFromExpression, unreadableCallMessage } from '../../src/tasks/arith';
import { QWEN3_DIR } from './chat-models';

interface Seen {
  body: { messages: ChatMessage[]; tools?: ToolSpec[]; chat_template_kwargs?: { enable_thinking?: boolean } };
  ids: number[];
}

let model: ChatModel;
let server: http.Server;
let baseUrl: string;
/** The scripted model's turns (text without the end-of-turn token), and the requests the server got. */
let script: string[] = [];
let seen: Seen[] = [];

beforeAll(async () => {
  model = loadChatModel(QWEN3_DIR);
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as Seen['body'];
      const thinking = body.chat_template_kwargs?.enable_thinking;
      // vLLM reads an assistant's null content as no parts, rendered "" (renderers/chat_utils.py _parse_chat_message_content).
      const messages = body.messages.map((m) => (m.role === 'assistant' && m.content === null ? { ...m, content: '' } : m));
      let text: string;
      try {
        text = model.template.render(asVllmRenders(messages), { tools: body.tools, addGenerationPrompt: true, ...(thinking !== undefined ? { enableThinking: thinking } : {}) });
      } catch (err) {
        res.statusCode = 500;
        return res.end(JSON.stringify({ error: { message: String(err) } }));
      }
      seen.push({ body, ids: model.tokenizer.encode(text) });
      const out = script[seen.length - 1]!;
      // As vLLM serves Qwen3 here: --tool-call-parser hermes, and --reasoning-parser qwen3 when thinking.
      const turn = parseModelTurn(out, { ...(thinking !== false ? { reasoningParser: 'qwen3' as const } : {}), thinking: thinking ?? true, tools: (body.tools ?? []).map((t) => t.function.name) });
      const calls = turn.toolCalls.map((c, i) => ({ id: `call_${seen.length}_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: `chatcmpl-${seen.length}`,
          object: 'chat.completion',
          created: 0,
          model: 'policy',
          choices: [{ index: 0, finish_reason: calls.length ? 'tool_calls' : 'stop', message: { role: 'assistant', content: turn.content, reasoning_content: turn.reasoning, ...(calls.length ? { tool_calls: calls } : {}) } }],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

/** The chat agent's episode of `expression` against the scripted turns, as scripts/agent-episode.ts runs it in a chat-mode run. */
async function playAgent(expression: string, turns: string[], enableThinking: boolean) {
  script = turns;
  seen = [];
  const client = new OpenAI({ baseURL: baseUrl, apiKey: 'none', maxRetries: 0 });
  const result = await solveArithmetic(client, expression, { model: 'policy', format: 'chat', episodeId: 'e1', maxCalls: 2, temperature: 1, maxTokens: 64, chatTemplateKwargs: { enable_thinking: enableThinking } });
  return { result, seen };
}

/** The spans of a demonstration: the first prompt, the first model turn, the prompt up to the second. */
function demoParts(expression: string, enableThinking: boolean) {
  const demo = chatDemonstration(problemFromExpression(expression), model, chatConversationOptions({ enableThinking }), 1);
  const firstModel = demo.lossMask.indexOf(1);
  const afterCall = demo.lossMask.indexOf(0, firstModel);
  const secondModel = demo.lossMask.indexOf(1, afterCall);
  const text = (from: number, to?: number) => model.tokenizer.decode(demo.tokens.slice(from, to));
  return {
    demo,
    firstPrompt: demo.tokens.slice(0, firstModel),
    // The model's turns as their text, less the end-of-turn token vLLM stops on.
    call: text(firstModel, afterCall).replace(model.tokenizer.eosToken, ''),
    answer: text(secondModel).replace(model.tokenizer.eosToken, ''),
    secondPromptText: text(0, secondModel),
  };
}

describe("the chat agent plays chat SFT's episode", () => {
  it.each([false, true])("renders its first request to a demonstration's first prompt ids, its tool message and history as the demonstration's (enable_thinking %s)", async (enableThinking) => {
    const expression = '17+25+8';
    const parts = demoParts(expression, enableThinking);
    expect(parts.demo.usesTool).toBe(true);
    const { result, seen: requests } = await playAgent(expression, [parts.call, parts.answer], enableThinking);
    expect(result).toEqual({ answer: '50', requests: 2, unreadableToolCalls: 0 });
    expect(requests).toHaveLength(2);
    // The same messages, the same tools (one definition: CHAT_TOOLS), the same template switch.
    expect(requests[0]!.ids).toEqual(parts.firstPrompt);
    // The tool message: the calculator's value as the demonstration writes it.
    const tool = requests[1]!.body.messages.find((m) => m.role === 'tool')!;
    expect(tool.content).toBe(String(problemFromExpression(expression).answer));
    expect(tool.content).toBe(calc(expression));
    // The second request, rendered by the server from the history the agent sent back, is the
    // demonstration's prompt up to its answer, except that Qwen3's template drops the earlier turn's
    // think block (empty here) from history: the rewrite docs/gateway.md documents.
    const second = model.tokenizer.decode(requests[1]!.ids);
    expect(second).toBe(parts.secondPromptText.replace('<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>', '<|im_start|>assistant\n<tool_call>'));
    expect(second).not.toBe(parts.secondPromptText);
  });

  // What a policy may learn to answer with after the tool result, right and wrong.
  const FORMATS = ['50', 'The answer is 50', '17+25+8 = 50', '<think>\nadding up\n</think>\n\n50', '50.', '51', 'I cannot tell', ''];

  it.each(FORMATS)('scores the final turn %j as the chat evaluation does', async (final) => {
    const expression = '17+25+8';
    const problem = problemFromExpression(expression);
    const call = formatHermesToolCalls([{ name: CALC_TOOL_NAME, arguments: { expression } }]);
    const { result } = await playAgent(expression, [call, final], false);
    // The chat evaluation's episode of the same turns: the driver's reading of the final content.
    const turns = [call, final];
    let t = 0;
    const episode = await playChatEpisode(
      problem,
      {
        turn: async () => ({ parsed: parseModelTurn(turns[t++]!, { thinking: false, tools: [CALC_TOOL_NAME] }), finishReason: 'stop' }),
        calc: async (e) => calc(e),
      },
      { maxTurns: 3 },
    );
    expect(agentAnswerReward(problem, result.answer, true)).toBe(episode.reward);
  });

  it.each([
    ['bad-json', '<tool_call>\n{"name": "calc", "arguments": {"expression": 17+25+8}}\n</tool_call>'],
    ['no-arguments', '<tool_call>\n{"name": "calc"}\n</tool_call>'],
  ] as const)('answers a tool call vLLM cannot parse (%s) as the chat episodes do, and lets the model retry', async (kind, unreadable) => {
    const expression = '17+25+8';
    const problem = problemFromExpression(expression);
    const call = formatHermesToolCalls([{ name: CALC_TOOL_NAME, arguments: { expression } }]);
    const turns = [unreadable, call, '50'];
    const { result, seen: requests } = await playAgent(expression, turns, false);
    expect(result).toEqual({ answer: '50', requests: 3, unreadableToolCalls: 1 });
    // The server returned the unreadable turn as content; the agent sent it back and then the retry message.
    const afterFirst = requests[1]!.body.messages.slice(-2);
    expect(afterFirst[0]).toMatchObject({ role: 'assistant', content: unreadable });
    expect(afterFirst[1]).toEqual({ role: 'user', content: unreadableCallMessage(kind) });
    // The chat episode driver, on the same turns, answers with the same message and scores alike.
    let t = 0;
    const envs: ChatMessage[][] = [];
    const episode = await playChatEpisode(
      problem,
      {
        turn: async (env) => (envs.push(env), { parsed: parseModelTurn(turns[t++]!, { thinking: false, tools: [CALC_TOOL_NAME] }), finishReason: 'stop' }),
        calc: async (e) => calc(e),
      },
      { maxTurns: 3 },
    );
    expect(envs[1]).toEqual([{ role: 'user', content: unreadableCallMessage(kind) }]);
    expect(episode.malformedToolCalls).toBe(1);
    expect(agentAnswerReward(problem, result.answer, true)).toBe(episode.reward);
    expect(episode.reward).toBe(1);
  });

  it('gives the trained formats their reward: the plain number and a sentence ending in it score 1, the Plan/Act reading only the plain number', async () => {
    const problem = problemFromExpression('17+25+8');
    expect(agentAnswerReward(problem, '50', true)).toBe(1);
    expect(agentAnswerReward(problem, 'The answer is 50', true)).toBe(1);
    expect(agentAnswerReward(problem, 'The answer is 50', false)).toBe(0);
    expect(agentAnswerReward(problem, '50', false)).toBe(1);
  });
});
