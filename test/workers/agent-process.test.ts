/**
 * The agent command of rollout.kind: agent as the tools worker runs it: its environment, its result
 * line, and every way it can fail, each a typed error that says what happened (a real child process).
 */
import { AgentCommandError, AgentOutputError, AgentProcessError, runAgentProcess } from '../../activities/agent-process';
import { parseRunConfig } from '../../src/config/parse';

const node = (script: string) => [process.execPath, '-e', script];
const run = (argv: string[], extra: Partial<Parameters<typeof runAgentProcess>[0]> = {}) =>
  runAgentProcess({ argv, cwd: process.cwd(), env: { DURABLE_RL_PROBLEM: '2+3' }, timeoutMs: 10_000, ...extra });

test('passes the environment and reads the last line as the result', async () => {
  const out = await run(node('console.log("thinking..."); console.log(JSON.stringify({ answer: process.env.DURABLE_RL_PROBLEM, requests: 2 }))'));
  expect(out).toEqual({ answer: '2+3', requests: 2 });
});

test('an agent that prints no result, a wrong shape, or exits with an error fails with a typed error naming why', async () => {
  await expect(run(node('console.log("the answer is 5")'))).rejects.toThrow(new AgentOutputError(`the agent's last line is not JSON: "the answer is 5"; it must print {"answer": ...}`));
  await expect(run(node('console.log(JSON.stringify({ answer: 5 }))'))).rejects.toBeInstanceOf(AgentOutputError);
  const crash = run(node('console.error("no gateway at OPENAI_BASE_URL"); process.exit(3)'));
  await expect(crash).rejects.toBeInstanceOf(AgentProcessError);
  await expect(crash).rejects.toThrow(/exited with 3; its stderr ends: no gateway at OPENAI_BASE_URL/);
  const missing = run(['/nonexistent/agent']);
  await expect(missing).rejects.toBeInstanceOf(AgentCommandError);
  await expect(missing).rejects.toThrow(/could not start "\/nonexistent\/agent"/);
});

test('an agent past its time, or whose activity is cancelled, is killed with what it started', async () => {
  const t0 = Date.now();
  // Past its time: not retried (the same agent would run as long again).
  const late = run(node('setTimeout(() => {}, 60_000)'), { timeoutMs: 300 });
  await expect(late).rejects.toBeInstanceOf(AgentCommandError);
  await expect(late).rejects.toThrow(/ran past rollout.agent.timeoutSec/);
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(), 200);
  await expect(run(node('require("child_process").spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "inherit" }); setTimeout(() => {}, 60_000)'), { signal: ctl.signal })).rejects.toThrow(/its activity was cancelled/);
  expect(Date.now() - t0).toBeLessThan(10_000);
  const gone = new AbortController();
  gone.abort();
  await expect(run(node('console.log(JSON.stringify({ answer: "1" }))'), { signal: gone.signal })).rejects.toThrow(/not started: its activity was cancelled/);
});

test('rollout.agent is refused by name unless rollout.kind is agent', () => {
  expect(() => parseRunConfig({ rollout: { kind: 'standard', agent: { command: ['my-agent'] } } })).toThrow(/rollout.agent takes effect with rollout.kind: agent/);
  expect(parseRunConfig({ rollout: { kind: 'agent' } }).rollout.agent).toBeUndefined();
  expect(() => parseRunConfig({ rollout: { kind: 'agent', agent: { command: [] } } })).toThrow(/rollout.agent.command/);
});
