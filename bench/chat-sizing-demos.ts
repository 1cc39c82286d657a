/**
 * The demonstrations bench/gpu/chat_sizing.py trains on (docs/chat-episodes.md, "Sizing the policy"):
 * configs/qwen3-chat.yaml's SFT demonstrations, built by the main job's own code (chatDemonstration
 * over the real Qwen3 tokenizer and template), and 200 held-out problems demonstrated with the
 * calculator, as token ids and loss masks in one JSON file.
 *   npm run build && node dist/bench/chat-sizing-demos.js bench/gpu/demos.json
 */
import fs from 'node:fs';
import { chatConversationOptions, chatModelOf } from '../activities/chat-episodes';
import { chatDemonstration, drawProblems } from '../src/tasks/arith';

const out = process.argv[2];
if (!out) throw new Error('usage: node dist/bench/chat-sizing-demos.js <out.json>');
const model = chatModelOf({ tokenizer: 'qwen3' });
const opts = chatConversationOptions({ enableThinking: false });
const difficulty = { minTerms: 2, maxTerms: 3, minDigits: 1, maxDigits: 2, operators: ['+' as const] };
const demos = (part: 'sft' | 'test', seed: number, count: number, toolUseRate: number) =>
  drawProblems({ seed, count, scheme: 'expression', part, difficulty }).map((p) => {
    const d = chatDemonstration(p, model, opts, toolUseRate);
    return { t: d.tokens, m: d.lossMask, tool: d.usesTool };
  });
// The SFT part at the rate 0.5 of the first configuration: the sweep reweighs it to other shares.
fs.writeFileSync(out, JSON.stringify({ sft: demos('sft', 1, 2000, 0.5), heldout: demos('test', 2, 200, 1) }));
console.log(`wrote ${out}`);
