/**
 * Token-in/token-out episodes: the kept ids (first prompt, engine ids, environment deltas) against the
 * tokenized full render of the same conversation, on 300 random episodes of both templates. ChatML is
 * append-only: no difference at all (the "\n" after <|im_end|> travels in the delta). Qwen3 differs
 * exactly where its template rewrites history, and only there: earlier thinking dropped (or an empty
 * think block of a non-thinking prompt), and the newline it adds between a parsed turn's content and
 * its tool call; each classified, nothing masked. The full render itself is transformers' (after vLLM's
 * own message post-processing), from the Python peer.
 */
import { ChatTemplate, checkConversation, loadChatModel, TokenConversation, type ChatModel } from '../../src/chat';
import { CALC_TOOL } from './random-chats';
import { QWEN3_DIR, chatmlModelDir, runPythonPeer } from './chat-models';
import { randomEpisode, type Episode, type ScriptedTurn } from './random-episodes';

const COUNT = 300;

/** Whether Qwen3's full render writes this model turn differently from how it was generated. */
function rewritten(e: Episode, turn: ScriptedTurn): boolean {
  if (e.template === 'chatml') return false;
  const messages = e.conv.messages;
  let lastQuery = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user' && !(m.content.startsWith('<tool_response>') && m.content.endsWith('</tool_response>'))) lastQuery = i;
  });
  const isLast = turn.messageIndex === messages.length - 1;
  const thinking = e.opts.enableThinking !== false;
  // Qwen3 writes a think block only after the last user query, and there only for the last message or a non-empty reasoning.
  const thinkingRewritten = thinking ? turn.messageIndex < lastQuery : !(turn.messageIndex > lastQuery && isLast);
  const newlineAdded = turn.content !== '' && turn.calls > 0;
  return thinkingRewritten || newlineAdded;
}

it(`keeps the engine's ids across turns; on ${COUNT} random episodes the only differences from a full render are Qwen3's rewrites, classified`, () => {
  const models: Record<'qwen3' | 'chatml', ChatModel> = { qwen3: loadChatModel(QWEN3_DIR), chatml: loadChatModel(chatmlModelDir()) };
  const episodes = Array.from({ length: COUNT }, (_, i) => randomEpisode(5000 + i, models));
  const py = runPythonPeer({
    renders: episodes.map((e) => ({
      model: e.template === 'qwen3' ? QWEN3_DIR : chatmlModelDir(),
      messages: e.conv.messages,
      ...(e.opts.tools === undefined ? {} : { tools: e.opts.tools }),
      add_generation_prompt: !e.conv.endsWithModelTurn,
      ...(e.opts.enableThinking === undefined ? {} : { enable_thinking: e.opts.enableThinking }),
      vllm: true,
    })),
  });
  const seen = { chatml: 0, appendOnlyQwen3: 0, rewrittenTurns: 0, whitespace: 0 };
  for (const [i, e] of episodes.entries()) {
    const where = `episode ${i} (seed ${5000 + i}, ${e.template}, ${JSON.stringify(e.opts.enableThinking)})`;
    const want = py.renders[i]!;
    if ('error' in want) throw new Error(`${where}: transformers failed: ${want.error}`);
    // The conversation the check renders is the one transformers renders from the same messages.
    if (e.conv.render(e.conv.messages, !e.conv.endsWithModelTurn) !== want.text) throw new Error(`${where}: full render differs from transformers'`);
    const check = checkConversation(e.conv);
    const bad = check.mismatches.filter((m) => m.kind !== 'thinking-rewrite' && m.kind !== 'whitespace-rewrite');
    if (bad.length > 0) throw new Error(`${where}: unexpected mismatch ${JSON.stringify(bad[0])}`);
    if (e.template === 'chatml' && check.mismatches.length > 0) throw new Error(`${where}: ChatML is append-only, yet ${JSON.stringify(check.mismatches[0])}`);
    for (const turn of e.turns) {
      const hit = check.mismatches.some((m) => m.kept[0] < turn.span[1] + 2 && m.kept[1] > turn.span[0] - 12);
      if (hit !== rewritten(e, turn)) throw new Error(`${where}: turn at message ${turn.messageIndex} ${hit ? 'differs' : 'does not differ'} from the full render, expected otherwise: ${JSON.stringify(check.mismatches)}`);
      if (hit) seen.rewrittenTurns++;
    }
    // Nothing the model wrote is masked: the rewrites are the template's, the ids are the engine's.
    expect(check.lossMask).toEqual(e.conv.modelMask);
    if (e.template === 'chatml') seen.chatml++;
    else if (check.mismatches.length === 0) seen.appendOnlyQwen3++;
    seen.whitespace += check.counts['whitespace-rewrite'];
  }
  // Every situation above occurs (a generator change that stopped producing one would fail here).
  expect(seen.chatml).toBeGreaterThan(COUNT / 5);
  expect(seen.appendOnlyQwen3).toBeGreaterThan(10);
  expect(seen.rewrittenTurns).toBeGreaterThan(50);
  expect(seen.whitespace).toBeGreaterThan(10);
}, 120_000);

it('a turn cut inside a tool call is counted as truncated, closed with an unmasked end-of-turn id, and the episode goes on', () => {
  const model = loadChatModel(QWEN3_DIR);
  const conv = new TokenConversation(model, [{ role: 'user', content: '1+1?' }], { reasoningParser: 'qwen3', tools: [CALC_TOOL] });
  conv.nextPrompt();
  const cut = model.tokenizer.encode('<think>\nuse calc\n</think>\n\n<tool_call>\n{"name": "calc", "argu');
  const parsed = conv.addModelTurn(cut, 'length');
  expect(parsed.malformed.map((m) => m.kind)).toEqual(['bad-json', 'truncated']);
  expect(conv.ids.at(-1)).toBe(model.tokenizer.eosId);
  expect(conv.modelMask.slice(-cut.length - 1)).toEqual([...cut.map(() => 1), 0]);
  // The environment answers the malformed call; the kept ids still equal the full render's.
  conv.addMessages({ role: 'user', content: 'Your tool call was cut off; try again.' });
  conv.nextPrompt();
  const check = checkConversation(conv);
  expect(check.counts.text).toBe(0);
  expect(() => conv.nextPrompt()).toThrow(expect.objectContaining({ kind: 'prompt-not-taken' }) as Error);
});

it('a template that rewrites earlier turns otherwise is a counted text mismatch, and those model ids are masked', () => {
  const chatml = loadChatModel(chatmlModelDir());
  // Keeps only the last assistant turn's text: not append-only, and not a rewrite this module knows.
  const forgetful = new ChatTemplate({
    chat_template:
      "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}{% if m.role == 'assistant' and not loop.last %}[omitted]{% else %}{{ m.content }}{% endif %}{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
  });
  const conv = new TokenConversation({ ...chatml, template: forgetful }, [{ role: 'user', content: 'a' }]);
  conv.nextPrompt();
  const said = chatml.tokenizer.encode('a long first answer');
  conv.addModelTurn([...said, chatml.tokenizer.eosId]);
  conv.addMessages({ role: 'user', content: 'b' });
  conv.nextPrompt();
  conv.addModelTurn([...chatml.tokenizer.encode('second'), chatml.tokenizer.eosId]);
  const check = checkConversation(conv);
  expect(check.mismatches).toEqual([expect.objectContaining({ kind: 'text', keptText: 'a long first answer', expectedText: '[omitted]', modelIds: said.length })]);
  expect(check.counts.text).toBe(1);
  expect(check.unalignedModelIds).toBe(said.length);
  const start = check.mismatches[0]!.kept[0];
  expect(check.lossMask.slice(start, start + said.length)).toEqual(said.map(() => 0));
  expect(conv.modelMask.slice(start, start + said.length)).toEqual(said.map(() => 1)); // the kept ids are untouched
});
