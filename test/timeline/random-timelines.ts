/**
 * Random timeline batches built to hit every corner of the merge rule: shared prefixes (chains and
 * branches), exact duplicates, author flips, retokenized messages (same text, other ids), messages
 * with the same ids but other text, empty messages, tools-list changes and several agents. A small
 * alphabet of contents makes coincidental equality common.
 */
import { pick, randInt, type Rng } from '../../src/domain/rng';
import type { Timeline, TimelineMessage } from '../../src/timeline';

const AGENTS = ['planner', 'actor', 'critic'];
const TOOLS = ['', '[calc]', '[calc,search]'];

function message(rng: Rng, content: number, author: 'llm' | 'env'): TimelineMessage {
  const variant = rng();
  let text = `m${content}`;
  let tokenIds = Array.from({ length: 1 + (content % 3) }, (_, x) => 10 * content + x);
  if (variant < 0.12) tokenIds = [500 + content]; // retokenized: same text, other ids
  else if (variant < 0.2) text = `m${content}'`; // same ids, other text
  else if (variant < 0.23) {
    text = '';
    tokenIds = [];
  }
  return withAuthor(rng, { author: 'env', text, tokenIds, logprobs: tokenIds.map(() => 0) }, author);
}

function withAuthor(rng: Rng, m: TimelineMessage, author: 'llm' | 'env'): TimelineMessage {
  const logprobs = author === 'llm' ? m.tokenIds.map(() => -randInt(rng, 1, 40) / 8) : m.tokenIds.map(() => 0);
  return { author, text: m.text, tokenIds: m.tokenIds.slice(), logprobs };
}

const randomAuthor = (rng: Rng): 'llm' | 'env' => (rng() < 0.35 ? 'llm' : 'env');

/** One batch of `size` timelines; ids are `t0`, `t1`, ... in input order. */
export function randomTimelines(rng: Rng, size: number): Timeline[] {
  const out: Timeline[] = [];
  for (let i = 0; i < size; i++) {
    const roll = rng();
    let t: Timeline;
    if (out.length > 0 && roll < 0.1) {
      // An exact duplicate (a retried request), authors possibly flipped.
      const base = pick(rng, out);
      t = { ...base, messages: base.messages.map((m) => (rng() < 0.2 ? withAuthor(rng, m, randomAuthor(rng)) : withAuthor(rng, m, m.author))) };
    } else if (out.length > 0 && roll < 0.75) {
      // A continuation or a branch of an earlier request.
      const base = pick(rng, out);
      const keep = randInt(rng, 0, base.messages.length);
      const messages = base.messages.slice(0, keep).map((m) => {
        const r = rng();
        if (r < 0.15) return withAuthor(rng, m, randomAuthor(rng));
        if (r < 0.22) return message(rng, randInt(rng, 0, 5), m.author);
        return withAuthor(rng, m, m.author);
      });
      const extra = randInt(rng, keep === 0 ? 1 : 0, 3);
      for (let e = 0; e < extra; e++) messages.push(message(rng, randInt(rng, 0, 5), randomAuthor(rng)));
      t = {
        id: '',
        agent: rng() < 0.9 ? base.agent : pick(rng, AGENTS),
        tools: rng() < 0.8 ? base.tools : pick(rng, TOOLS),
        messages,
      };
    } else {
      const messages = Array.from({ length: randInt(rng, 1, 5) }, () => message(rng, randInt(rng, 0, 5), randomAuthor(rng)));
      t = { id: '', agent: pick(rng, AGENTS), tools: pick(rng, TOOLS), messages };
    }
    // Most requests end with the model's output.
    const last = t.messages.length - 1;
    if (rng() < 0.8) t.messages[last] = withAuthor(rng, t.messages[last]!, 'llm');
    out.push({ ...t, id: `t${i}` });
  }
  return out;
}
