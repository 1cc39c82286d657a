/**
 * The tools worker's recording proxies (activities/agent-proxies.ts): one per upstream and tokenizer
 * directory; with the served model's directory a proxy keeps conversations token-in/token-out, and a
 * directory it cannot use is refused by name, opening nothing. The proxy's behaviour against a real
 * vLLM is test/gateway/upstream-vllm-qwen3.test.ts's.
 */
import path from 'node:path';
import { AgentProxies } from '../../activities/agent-proxies';
import { QWEN3_DIR } from '../chat/chat-models';
import { tempStore } from '../helpers/store';

test('a proxy per upstream and tokenizer directory; a directory it cannot use is refused by name', async () => {
  const proxies = new AgentProxies(tempStore('agent-proxies'));
  const upstream = 'http://127.0.0.1:1/v1';
  try {
    const missing = path.join(QWEN3_DIR, 'no-such-dir');
    await expect(proxies.baseUrl(upstream, missing)).rejects.toThrow(`the tokenizer directory ${JSON.stringify(missing)}: no such directory`);
    const tito = await proxies.baseUrl(upstream, QWEN3_DIR);
    const plain = await proxies.baseUrl(upstream);
    expect(tito).not.toBe(plain);
    expect(await proxies.baseUrl(upstream, QWEN3_DIR)).toBe(tito);
    // Both are served (with the worker's key): /health goes to the (absent) upstream, a 502.
    for (const base of [tito, plain]) expect((await fetch(base.replace(/\/v1$/, '/health'))).status).toBe(502);
  } finally {
    await proxies.close();
  }
});
