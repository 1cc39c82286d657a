/**
 * An outside agent (src/gateway/arith-agent.ts, written only against the official `openai` client)
 * solving held-out problems through any OpenAI-compatible endpoint (here the gateway, `npm run
 * gateway`), one episode id per problem so the gateway records each episode's calls as timelines.
 *
 *   [OPENAI_API_KEY=<the gateway's key>] npm run agent -- [--base-url http://127.0.0.1:8000/v1] [--model durable-rl] [--problems 16] [--seed 1]
 */
import OpenAI from 'openai';
import { solveArithmetic } from '../src/gateway/arith-agent';
import { agentMain } from './lib/agent-cli';

let client: OpenAI | undefined;
agentMain('agent', async (baseUrl, model, expression, episodeId) => {
  client ??= new OpenAI({ baseURL: baseUrl, apiKey: process.env.OPENAI_API_KEY ?? 'none' });
  return (await solveArithmetic(client, expression, { model, episodeId })).answer;
});
