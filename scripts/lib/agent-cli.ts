/**
 * The command line both example agents share: which endpoint and problems, then one episode id per
 * held-out two-term sum, each answer checked against the calculator, and the count correct.
 */
import { Command } from 'commander';
import { calc } from '../../src/tasks/arith/calc';
import { generateProblems } from '../../src/tasks/arith/problem';

/** Solves `expression` at `baseUrl` under `episodeId`; the model's answer, or null. */
export type Solver = (baseUrl: string, model: string, expression: string, episodeId: string) => Promise<string | null>;

export async function runAgentCli(name: string, solve: Solver): Promise<void> {
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
    const episode = `${name}-s${opts.seed}-${i}`;
    const answer = await solve(opts.baseUrl, opts.model, p.expression, episode);
    const ok = answer === calc(p.expression);
    correct += ok ? 1 : 0;
    console.log(`${episode}: ${p.expression} → ${answer ?? '(no answer)'} ${ok ? '✓' : '✗'}`);
  }
  console.log(`${correct} of ${problems.length} correct`);
}

/** Runs the CLI, exiting 1 with the message on failure. */
export function agentMain(name: string, solve: Solver): void {
  runAgentCli(name, solve).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
