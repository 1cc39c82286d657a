/**
 * An outside agent (src/gateway/arith-agent.ts, written only against the official `openai` client)
 * solving held-out problems through any OpenAI-compatible endpoint (here the gateway, `npm run
 * gateway`), one episode id per problem so the gateway records each episode's calls as timelines.
 *
 *   npm run agent -- [--base-url http://127.0.0.1:8000/v1] [--model durable-rl] [--problems 16] [--seed 1]
 */
import { Command } from 'commander';
import OpenAI from 'openai';
import { solveArithmetic } from '../src/gateway/arith-agent';
import { calc } from '../src/tasks/arith/calc';
import { generateProblems } from '../src/tasks/arith/problem';

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
    const { answer } = await solveArithmetic(client, p.expression, { model: opts.model, episodeId: episode });
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
