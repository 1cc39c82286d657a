/**
 * One act on the actor policy: generate, and while the generation ends in a tool call, run the
 * tool and continue from the extended transcript; the text after the last tool result is the
 * act's answer.
 */
import { ActorAnswerError, extractToolCall, parseActorAnswer } from './actor-parser';
import { errorMessage } from './error-message';
import type { ActRecord, EpisodeDeps, EpisodeFailure, EpisodeLimits, GenerateOutput, GenerationRecord } from './episode-types';
import { closeTurn, formatToolError, formatToolResult, TOOL_CALL_CLOSE, type PlannedAct } from './protocol';

export interface ActContext<G extends GenerateOutput> {
  deps: EpisodeDeps<G>;
  limits: EpisodeLimits;
  episodeId: string;
  turn: number;
  /** The task's actor prompt for this act. */
  prompt: string;
}

export interface ActOutcome<G extends GenerateOutput> {
  record: ActRecord;
  generations: Array<GenerationRecord<G>>;
}

export async function runAct<G extends GenerateOutput>(ctx: ActContext<G>, act: PlannedAct): Promise<ActOutcome<G>> {
  const { deps, limits, turn } = ctx;
  const generations: Array<GenerationRecord<G>> = [];
  let transcript = ctx.prompt;
  const messageStarts = [0];
  const append = (text: string): void => {
    messageStarts.push(transcript.length);
    transcript += text;
  };
  let toolCalls = 0;
  let toolFailures = 0;
  const finish = (extra: { result?: string; failure?: EpisodeFailure }): ActOutcome<G> => ({
    record: { ...act, ...extra, toolCalls, toolFailures, generations: generations.length, transcript },
    generations,
  });
  const fail = (code: EpisodeFailure['code'], message: string) =>
    finish({ failure: { code, message: `act ${act.id}: ${message}`, turn, actId: act.id } });

  for (let step = 0; ; step++) {
    const output = await deps.generate('actor', transcript, {
      episodeId: ctx.episodeId,
      turn,
      actId: act.id,
      step,
      stop: [TOOL_CALL_CLOSE],
      maxNewTokens: limits.actorMaxNewTokens,
      messageStarts: messageStarts.slice(),
    });
    generations.push({ role: 'actor', turn, actId: act.id, step, prompt: transcript, completion: output.text, finishReason: output.finishReason, output });
    if (output.finishReason === 'length') {
      append(output.text);
      return fail('actor-length', `actor output hit the ${limits.actorMaxNewTokens}-token limit`);
    }
    const call = extractToolCall(output.text, output.finishReason);
    if (call === null) {
      const written = closeTurn(output.text);
      const answerPart = transcript.slice(ctx.prompt.length) + written;
      append(written);
      try {
        return finish({ result: parseActorAnswer(answerPart) });
      } catch (err) {
        if (err instanceof ActorAnswerError) return fail('actor-bad-answer', err.message);
        throw err;
      }
    }
    append(call.text);
    if (toolCalls >= limits.maxToolCallsPerAct) {
      return fail('tool-call-limit', `more than ${limits.maxToolCallsPerAct} tool calls`);
    }
    toolCalls++;
    try {
      append(formatToolResult(await deps.calc(call.expression)));
    } catch (err) {
      toolFailures++;
      append(formatToolError(errorMessage(err)));
    }
  }
}
