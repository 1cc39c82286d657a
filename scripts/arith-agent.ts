/**
 * An outside agent, written only against the official `openai` client: it solves arithmetic problems
 * through any OpenAI-compatible endpoint (here the gateway, `npm run gateway`), running the
 * calculator tool itself when the model calls it, one episode id per problem so the gateway records
 * each episode's calls as timelines.
 *
 *   npm run agent -- [--base-url http://127.0.0.1:8000/v1] [--model durable-rl] [--problems 16] [--seed 1]
 */
import { Command } from 'commander';
import OpenAI from 'openai';
import { calc } from '../src/tasks/arith/calc';
import { generateProblems } from '../src/tasks/arith/problem';

const TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'calc', description: 'Evaluates an arithmetic expression', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } } },
];

/** One episode: ask, run tool calls until the model answers (at most `maxCalls` calls), return its answer. */
async function solve(client: OpenAI, model: string, expression: string, episode: string, maxCalls = 3): Promise<string | null> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `Evaluate: ${expression}\n` }];
  for (let call = 0; call <= maxCalls; call++) {
    const r = await client.chat.completions.create({ model, messages, tools: TOOLS, temperature: 0, max_tokens: 32 }, { headers: { 'x-episode-id': episode } });
    const msg = r.choices[0]!.message;
    messages.push(msg);
    if (!msg.tool_calls?.length) return msg.content?.trim() ?? null;
    for (const tc of msg.tool_calls) {
      if (tc.type !== 'function') continue;
      let content: string;
      try {
        content = calc((JSON.parse(tc.function.arguments) as { expression: string }).expression);
      } catch (err) {
        content = `error: ${err instanceof Error ? err.message : String(err)}`;
      }
      messages.push({ role: 'tool', tool_call_id: tc.id, content });
    }
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
  const client = new OpenAI({ baseURL: opts.baseUrl, apiKey: process.env.OPENAI_API_KEY ?? 'none' });
  const problems = generateProblems({ seed: opts.seed, count: opts.problems, split: 'heldout', difficulty: { minTerms: 2, maxTerms: 2, minDigits: 1, maxDigits: 2, operators: ['+'] } });
  let correct = 0;
  for (const [i, p] of problems.entries()) {
    const episode = `agent-s${opts.seed}-${i}`;
    const answer = await solve(client, opts.model, p.expression, episode);
    const ok = answer === calc(p.expression);
    correct += ok ? 1 : 0;
    console.log(`${episode}: ${p.expression} → ${answer ?? '(no answer)'} ${ok ? '✓' : '✗'}`);
  }
  console.log(`${correct} of ${problems.length} correct`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
