/**
 * An arithmetic agent written only against the official `openai` client, as outside code would be:
 * it asks the model to evaluate an expression, runs the calculator itself whenever the model calls
 * it, and returns the model's final answer. Used by `npm run agent` and by agent-episode activities.
 */
import OpenAI from 'openai';
import { calc } from '../tasks/arith/calc';

export const CALC_TOOLS: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'calc', description: 'Evaluates an arithmetic expression', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } },
  },
];

export interface AgentAnswer {
  /** The model's last text, trimmed; null when it never answered within maxCalls tool calls. */
  answer: string | null;
  /** Chat requests the episode made. */
  requests: number;
}

export interface SolveOptions {
  model: string;
  /** Sent as x-episode-id: the gateway records the episode's calls under it. */
  episodeId: string;
  maxCalls?: number;
  temperature?: number;
  /** Nucleus sampling's top_p; left out of the request when absent (the server's default, 1). */
  topP?: number;
  maxTokens?: number;
  seed?: number;
}

export async function solveArithmetic(client: OpenAI, expression: string, o: SolveOptions): Promise<AgentAnswer> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `Evaluate: ${expression}\n` }];
  const maxCalls = o.maxCalls ?? 3;
  for (let call = 0; call <= maxCalls; call++) {
    const r = await client.chat.completions.create(
      {
        model: o.model,
        messages,
        tools: CALC_TOOLS,
        temperature: o.temperature ?? 0,
        ...(o.topP !== undefined ? { top_p: o.topP } : {}),
        max_tokens: o.maxTokens ?? 32,
        ...(o.seed !== undefined ? { seed: o.seed + call } : {}),
      },
      { headers: { 'x-episode-id': o.episodeId } },
    );
    const msg = r.choices[0]!.message;
    messages.push(msg);
    if (!msg.tool_calls?.length) return { answer: msg.content?.trim() ?? null, requests: call + 1 };
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
  return { answer: null, requests: maxCalls + 1 };
}
