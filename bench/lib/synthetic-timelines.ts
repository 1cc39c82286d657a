/**
 * Synthetic Plan/Act episodes as captured timelines, for bench/merge.ts and the merge tests.
 *
 * Each episode: a planner chain (every turn's request repeats the previous turns, its plans and the
 * acts' results), per plan 1-3 acts each run by an actor chain with 0-3 calculator rounds, and one
 * summarizer request. Branches and snaps as real agents make them: a planner turn retried with a
 * new sample (two requests with one context), an actor whose malformed call gets a temporary error
 * message that the framework drops again, replies fed back retokenized (same text, other ids), and
 * actors whose tools list grows mid-episode. Agent names are shared by all episodes (one batch),
 * so episodes share the system prompts and branch at the task.
 *
 * Messages of one content share their token-id arrays between requests (as a capture that
 * deduplicates would); merging never mutates its input, so that only saves memory.
 */
import { fnv1a32, mulberry32, randInt, type Rng } from '../../src/domain/rng';
import type { Timeline, TimelineMessage } from '../../src/timeline';

export interface SyntheticOptions {
  /** Exactly this many timelines (the last episode is cut short). */
  timelines: number;
  seed: number;
}

const VOCAB = 151_000;

/** One piece of content: the llm form (engine ids and logprobs) and the env forms fed back. */
interface Content {
  text: string;
  ids: number[];
  logprobs: number[];
  zeros: number[];
}

function content(rng: Rng, text: string, tokens: number): Content {
  const ids = Array.from({ length: tokens }, () => Math.floor(rng() * VOCAB));
  return { text, ids, logprobs: ids.map(() => -rng() * 3), zeros: ids.map(() => 0) };
}

const asEnv = (c: Content): TimelineMessage => ({ author: 'env', text: c.text, tokenIds: c.ids, logprobs: c.zeros });
const asLlm = (c: Content): TimelineMessage => ({ author: 'llm', text: c.text, tokenIds: c.ids, logprobs: c.logprobs });

/** The reply as the next request carries it: usually the engine's ids, sometimes re-encoded ones. */
function fedBack(rng: Rng, c: Content): TimelineMessage {
  if (rng() >= 0.15) return asEnv(c);
  const ids = c.ids.slice();
  const at = Math.floor(rng() * ids.length);
  ids.splice(at, 1, (ids[at]! + 1) % VOCAB, (ids[at]! + 2) % VOCAB); // one token split in two
  return { author: 'env', text: c.text, tokenIds: ids, logprobs: ids.map(() => 0) };
}

export function syntheticTimelines(options: SyntheticOptions): Timeline[] {
  const shared = mulberry32(fnv1a32(`${options.seed >>> 0}:prompts`));
  const plannerSys = content(shared, 'system: you are the planner. Write ACT <id>: <expr> lines or ANSWER: <n>.', 60);
  const actorSys = content(shared, 'system: you are the actor. Evaluate the expression; call <calc> if needed.', 40);
  const summarySys = content(shared, 'system: summarize the episode in one line.', 30);
  const out: Timeline[] = [];
  const push = (agent: string, tools: string, messages: TimelineMessage[]): void => {
    if (out.length < options.timelines) out.push({ id: `r${out.length}`, agent, tools, messages });
  };

  for (let e = 0; out.length < options.timelines; e++) {
    const rng = mulberry32(fnv1a32(`${options.seed >>> 0}:episode ${e}`));
    const task = content(rng, `user: Compute episode ${e}`, randInt(rng, 10, 20));
    const planner: TimelineMessage[] = [asEnv(plannerSys), asEnv(task)];
    const turns = randInt(rng, 1, 4);
    let actorTools = '[calc]';
    for (let turn = 0; turn < turns; turn++) {
      const plan = content(rng, `planner: e${e} t${turn} plan`, randInt(rng, 12, 30));
      if (rng() < 0.1) push('planner', '', [...planner, asLlm(content(rng, `planner: e${e} t${turn} rejected plan`, 20))]);
      push('planner', '', [...planner, asLlm(plan)]);
      const results: string[] = [];
      const acts = randInt(rng, 1, 3);
      for (let a = 0; a < acts; a++) {
        const actor: TimelineMessage[] = [asEnv(actorSys), asEnv(content(rng, `user: Evaluate e${e} t${turn} a${a}`, randInt(rng, 6, 14)))];
        const rounds = randInt(rng, 0, 3);
        for (let r = 0; r < rounds; r++) {
          if (rng() < 0.05) actorTools = '[calc,search]'; // from now on, for the rest of the episode
          const call = content(rng, `actor: e${e} t${turn} a${a} call ${r}`, randInt(rng, 8, 16));
          push('actor', actorTools, [...actor, asLlm(call)]);
          if (rng() < 0.1) {
            // A malformed call: the framework retries with an error message, then drops both.
            const error = content(rng, `tool: e${e} t${turn} a${a} error ${r}`, 12);
            push('actor', actorTools, [...actor, fedBack(rng, call), asEnv(error), asLlm(content(rng, `actor: e${e} t${turn} a${a} retry ${r}`, 10))]);
          }
          actor.push(fedBack(rng, call), asEnv(content(rng, `tool: e${e} t${turn} a${a} result ${r}`, randInt(rng, 4, 8))));
        }
        const answer = content(rng, `actor: e${e} t${turn} a${a} answer`, randInt(rng, 2, 6));
        push('actor', actorTools, [...actor, asLlm(answer)]);
        results.push(answer.text);
      }
      planner.push(fedBack(rng, plan), asEnv(content(rng, `user: ${results.join(' ')}`, 6 * acts)));
    }
    push('planner', '', [...planner, asLlm(content(rng, `planner: e${e} answer`, 8))]);
    push('summarizer', '', [asEnv(summarySys), asEnv(task), asLlm(content(rng, `summary: e${e}`, 20))]);
  }
  return out;
}
