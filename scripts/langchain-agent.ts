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
import { Command } from 'commander';
import { z } from 'zod';
import { calc } from '../src/tasks/arith/calc';
import { generateProblems } from '../src/tasks/arith/problem';

const calcTool = tool(async ({ expression }: { expression: string }) => calc(expression), {
  name: 'calc',
  description: 'Evaluates an arithmetic expression',
  schema: z.object({ expression: z.string() }),
});

/** One episode with LangChain: invoke, run the tool calls, until the model answers. */
export async function solveWithLangChain(baseUrl: string, model: string, expression: string, episodeId: string, maxCalls = 3): Promise<string | null> {
  const chat = new ChatOpenAI({ model, apiKey: 'none', temperature: 0, maxTokens: 32, configuration: { baseURL: baseUrl, defaultHeaders: { 'x-episode-id': episodeId } } }).bindTools([calcTool]);
  const messages: BaseMessage[] = [new HumanMessage(`Evaluate: ${expression}\n`)];
  for (let call = 0; call <= maxCalls; call++) {
    const ai = await chat.invoke(messages);
    messages.push(ai);
    if (!ai.tool_calls?.length) return typeof ai.content === 'string' ? ai.content.trim() : null;
    for (const tc of ai.tool_calls) messages.push(await calcTool.invoke(tc));
  }
  return null;
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--base-url <url>', 'OpenAI-compatible endpoint', 'http://127.0.0.1:8000/v1')
    .option('--model <name>', 'model name', 'durable-rl')
    .option('--problems <n>', 'problems to solve', (v) => Number(v), 16)
    .option('--seed <n>', 'which problems', (v) => Number(v), 1)
    .parse()
    .opts<{ baseUrl: string; model: string; problems: number; seed: number }>();
  const problems = generateProblems({ seed: opts.seed, count: opts.problems, split: 'heldout', difficulty: { minTerms: 2, maxTerms: 2, minDigits: 1, maxDigits: 2, operators: ['+'] } });
  let correct = 0;
  for (const [i, p] of problems.entries()) {
    const episode = `langchain-s${opts.seed}-${i}`;
    const answer = await solveWithLangChain(opts.baseUrl, opts.model, p.expression, episode);
    const ok = answer === calc(p.expression);
    correct += ok ? 1 : 0;
    console.log(`${episode}: ${p.expression} → ${answer ?? '(no answer)'} ${ok ? '✓' : '✗'}`);
  }
  console.log(`${correct} of ${problems.length} correct`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
