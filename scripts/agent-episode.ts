/**
 * One episode of the openai-client arithmetic agent (src/gateway/arith-agent.ts), as trainingRun runs
 * an outside agent with rollout.kind: agent (docs/agents.md). Everything comes from the environment
 * the agent activity sets, as it would for any agent of yours:
 *
 *   OPENAI_BASE_URL, OPENAI_API_KEY   the gateway serving the step's weights
 *   DURABLE_RL_MODEL                  the model name it serves
 *   DURABLE_RL_EPISODE_ID             sent as x-episode-id on every call (the gateway records under it)
 *   DURABLE_RL_PROBLEM                the problem (here an arithmetic expression)
 *   DURABLE_RL_TEMPERATURE, DURABLE_RL_TOP_P (only when rl.topP is not 1), DURABLE_RL_MAX_TOKENS, DURABLE_RL_MAX_CALLS, DURABLE_RL_SEED
 *   DURABLE_RL_FORMAT                 chat for a model with its own chat template (a vLLM behind the recording proxy); plan-act (the default) for the gateway's embedded policy
 *   DURABLE_RL_CHAT_TEMPLATE_KWARGS   chat only, set in chat mode (task.chat): a JSON object sent as every request's chat_template_kwargs (e.g. {"enable_thinking":false})
 *
 * The last line it prints is the episode's result: {"answer": "<text>" | null, "requests": <n>}, in chat
 * format with "unreadableToolCalls": <n> (turns whose tool call the server could not parse).
 */
import OpenAI from 'openai';
import { AGENT_FORMATS, solveArithmetic, type AgentFormat } from '../src/gateway/arith-agent';

function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is not set: this script is run by the agent activity (rollout.kind: agent)`);
  return v;
}

function numberEnv(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got ${JSON.stringify(v)}`);
  return n;
}

function formatEnv(): AgentFormat {
  const v = process.env.DURABLE_RL_FORMAT;
  if (v === undefined || v === '') return 'plan-act';
  if (!(AGENT_FORMATS as readonly string[]).includes(v)) throw new Error(`DURABLE_RL_FORMAT must be one of ${AGENT_FORMATS.join(', ')}, got ${JSON.stringify(v)}`);
  return v as AgentFormat;
}

function jsonObjectEnv(name: string): Record<string, unknown> | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw new Error(`${name} must be a JSON object, got ${JSON.stringify(v)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${name} must be a JSON object, got ${JSON.stringify(v)}`);
  return parsed as Record<string, unknown>;
}

async function main(): Promise<void> {
  const client = new OpenAI({ baseURL: env('OPENAI_BASE_URL'), apiKey: process.env.OPENAI_API_KEY ?? 'none', maxRetries: 2 });
  const seed = numberEnv('DURABLE_RL_SEED');
  const temperature = numberEnv('DURABLE_RL_TEMPERATURE');
  const topP = numberEnv('DURABLE_RL_TOP_P');
  const maxTokens = numberEnv('DURABLE_RL_MAX_TOKENS');
  const maxCalls = numberEnv('DURABLE_RL_MAX_CALLS');
  const chatTemplateKwargs = jsonObjectEnv('DURABLE_RL_CHAT_TEMPLATE_KWARGS');
  const result = await solveArithmetic(client, env('DURABLE_RL_PROBLEM'), {
    model: env('DURABLE_RL_MODEL'),
    format: formatEnv(),
    episodeId: env('DURABLE_RL_EPISODE_ID'),
    ...(seed !== undefined ? { seed } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(topP !== undefined ? { topP } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(maxCalls !== undefined ? { maxCalls } : {}),
    ...(chatTemplateKwargs !== undefined ? { chatTemplateKwargs } : {}),
  });
  console.log(JSON.stringify(result));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
