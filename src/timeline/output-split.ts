/**
 * The model's turn, parted from what a chat template writes after it.
 *
 * A request's output is what the model wrote: its ids up to the end-of-turn id it stopped on. Sent
 * back in the next request, the template renders that turn and then whatever it closes a turn with
 * (ChatML: `<|im_end|>` and a newline; the model wrote the `<|im_end|>`, the newline is the
 * template's). A proxy that splits the next prompt where the template ends each message (the
 * recording proxy, src/gateway/upstream-split.ts) then holds the turn as `output + tail` in one
 * message, or, where the template renders a message differently when it is the last one (Qwen3's
 * think block), glued to the messages after it. Either way the message is not the output, so the
 * two requests would not merge although the server saw one append-only conversation.
 *
 * The rule, generic over templates: in a later request of the same agent, an input message at the
 * place where an earlier request's output stood (every message before it equal under the compare
 * key) whose ids BEGIN with that output's ids, and whose text begins with its text, is split in two
 * there: the output's ids, then the rest (env: the model did not write it). Both pieces are slices
 * of the ids the server saw, so nothing is re-tokenized or shifted; an output that is not at the
 * front of the message (the template rewrote it: dropped or added thinking, re-wrote a tool call)
 * splits nothing, and the requests stay apart as before.
 */
import { messageKey } from './compare';
import type { CompareBy, Timeline, TimelineMessage } from './types';
import { validateTimelines } from './validate';

export interface OutputSplit {
  /** Same order as the input; timelines with nothing split are the input objects themselves. */
  timelines: Timeline[];
  /** Input messages split into an earlier output and the template's text after it. */
  split: number;
}

interface Node {
  children: Map<string, Node>;
  /** Outputs of earlier timelines whose inputs lead here, oldest first. */
  outputs: TimelineMessage[];
}

const newNode = (): Node => ({ children: new Map(), outputs: [] });

function child(node: Node, key: string): Node {
  let next = node.children.get(key);
  if (next === undefined) node.children.set(key, (next = newNode()));
  return next;
}

/** `output`'s ids and text begin `m`'s, and `m` has more ids after them. */
function beginsWith(m: TimelineMessage, output: TimelineMessage): boolean {
  const head = output.tokenIds;
  if (head.length === 0 || head.length >= m.tokenIds.length || !m.text.startsWith(output.text)) return false;
  for (let x = 0; x < head.length; x++) if (head[x] !== m.tokenIds[x]) return false;
  return true;
}

const envMessage = (text: string, tokenIds: number[]): TimelineMessage => ({ author: 'env', text, tokenIds, logprobs: new Array<number>(tokenIds.length).fill(0) });

/**
 * Within each agent, in capture (input) order, splits every input message that begins with the
 * output an earlier timeline ended on at the same place (see the module comment); of several such
 * outputs the newest is used. A timeline's own output (its last message) is never split. Each
 * timeline's path, split, is remembered for the timelines after it, so a request three turns on
 * finds all its earlier turns. The input is never mutated.
 * Cost: O(total size): one compare key per message and one id comparison per candidate output.
 */
export function splitAtOutputs(timelines: readonly Timeline[], compareBy: CompareBy): OutputSplit {
  validateTimelines(timelines);
  const roots = new Map<string, Node>();
  let split = 0;
  const result = timelines.map((t) => {
    let node = roots.get(t.agent);
    if (node === undefined) roots.set(t.agent, (node = newNode()));
    let messages: TimelineMessage[] | undefined;
    const last = t.messages.length - 1;
    for (let k = 0; k < last; k++) {
      const m = t.messages[k]!;
      let output: TimelineMessage | undefined;
      for (let o = node.outputs.length - 1; o >= 0 && m.author === 'env' && output === undefined; o--) if (beginsWith(m, node.outputs[o]!)) output = node.outputs[o];
      if (output === undefined) {
        messages?.push(m);
        node = child(node, messageKey(m, compareBy));
        continue;
      }
      messages ??= t.messages.slice(0, k);
      const head = envMessage(output.text, m.tokenIds.slice(0, output.tokenIds.length));
      const tail = envMessage(m.text.slice(output.text.length), m.tokenIds.slice(output.tokenIds.length));
      messages.push(head, tail);
      node = child(child(node, messageKey(head, compareBy)), messageKey(tail, compareBy));
      split++;
    }
    const output = t.messages[last]!;
    messages?.push(output);
    if (output.author === 'llm') node.outputs.push(output);
    return messages === undefined ? t : { ...t, messages };
  });
  return { timelines: result, split };
}
