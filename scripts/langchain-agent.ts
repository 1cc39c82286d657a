/**
 * The arithmetic agent written with LangChain (`ChatOpenAI` from @langchain/openai with a bound
 * `calc` tool) instead of the bare `openai` client: outside framework code driving the policy through
 * the gateway, one episode id per problem.
 *
 *   npm run agent:langchain -- [--base-url http://127.0.0.1:8000/v1] [--model durable-rl] [--problems 16] [--seed 1]
 */
import { type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { calc } from '../src/tasks/arith/calc';
import { agentMain } from './lib/agent-cli';

const calcTool = tool(async ({ expression }: { expression: string }) => calc(expression), {
  name: 'calc',
  description: 'Evaluates an arithmetic expression',
  schema: z.object({ expression: z.string() }),
});

/** One episode with LangChain: invoke, run the tool calls, until the model answers. */
export async function solveWithLangChain(baseUrl: string, model: string, expression: string, episodeId: string, maxCalls = 3): Promise<string | null> {
  const chat = new ChatOpenAI({ model, apiKey: process.env.OPENAI_API_KEY ?? 'none', temperature: 0, maxTokens: 32, configuration: { baseURL: baseUrl, defaultHeaders: { 'x-episode-id': episodeId } } }).bindTools([calcTool]);
  const messages: BaseMessage[] = [new HumanMessage(`Evaluate: ${expression}\n`)];
  for (let call = 0; call <= maxCalls; call++) {
    const ai = await chat.invoke(messages);
    messages.push(ai);
    if (!ai.tool_calls?.length) return typeof ai.content === 'string' ? ai.content.trim() : null;
    for (const tc of ai.tool_calls) messages.push(await calcTool.invoke(tc));
  }
  return null;
}

if (require.main === module) agentMain('langchain', (baseUrl, model, expression, episodeId) => solveWithLangChain(baseUrl, model, expression, episodeId));
