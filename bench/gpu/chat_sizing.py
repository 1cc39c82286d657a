"""Which Qwen3 size and SFT rate learn configs/qwen3-chat.yaml's chat demonstrations in a few hundred
steps (docs/chat-episodes.md, "Sizing the policy"). A GPU makes the sweep minutes; each configuration
is then one CPU run of the main job.

    npm run build && node dist/bench/chat-sizing-demos.js bench/gpu/demos.json
    python bench/gpu/chat_sizing.py bench/gpu/demos.json --grid all [--budget-s 400]

Each line: a configuration trained from a random init (transformers' Qwen3, the real Qwen3 vocabulary,
AdamW β 0.9/0.99, warm-up 20 then cosine to 10%, clip 1, as the torch worker's SFT), then scored on the
200 held-out demonstrations by teacher forcing: `exact` is the share whose every model token is the
argmax (what greedy decoding then writes), `call` the share whose tool call (after the first token,
the choice to call) is, `answer` the share whose last turn is, `chooses_tool` the share whose first
token is the call's.
"""
import argparse
import json
import math
import time

import torch
from transformers import AutoModelForCausalLM, Qwen3Config

VOCAB, EOS, PAD = 151669, 151645, 151643
SIZES = {"d64": dict(d=64, H=2, kv=1, ff=192), "d96": dict(d=96, H=3, kv=1, ff=288), "d128": dict(d=128, H=4, kv=2, ff=384), "d256": dict(d=256, H=8, kv=4, ff=768)}
# name: (size, layers, rate, steps, batch, share of tool-using demonstrations (None: all of the file's), seed)
GRIDS = {
    "rate-3e-3": [(s, L, r, n, 24, None, 1) for n in (150, 250, 400) for s, L, r in (("d64", 2, 3e-3), ("d64", 2, 1e-2), ("d128", 2, 3e-3), ("d128", 2, 1e-2), ("d64", 3, 3e-3), ("d64", 4, 1e-2))],
    "tool-only": [("d128", 2, 3e-3, 400, 24, 1.0, 1), ("d64", 2, 3e-3, 400, 24, 1.0, 1), ("d128", 2, 1e-3, 400, 24, 1.0, 1), ("d128", 3, 3e-3, 400, 24, 1.0, 1), ("d256", 2, 3e-3, 400, 24, 1.0, 1),
                  ("d128", 2, 1e-3, 200, 24, 1.0, 2), ("d96", 2, 1e-3, 200, 24, 1.0, 1), ("d128", 2, 1e-3, 300, 12, 1.0, 1), ("d64", 2, 1e-3, 300, 24, 1.0, 1)],
    "mixed": [("d128", 2, 3e-3, 1600, 24, None, 1), ("d128", 2, 1e-3, 300, 24, None, 1), ("d128", 2, 1e-3, 300, 24, 0.7, 1), ("d128", 2, 1e-3, 300, 24, 0.7, 2), ("d128", 2, 1e-3, 300, 24, 0.7, 3)],
}
GRIDS["all"] = GRIDS["rate-3e-3"] + GRIDS["tool-only"] + GRIDS["mixed"]


def batch(rows, dev):
    n = max(len(r["t"]) for r in rows)
    t = torch.full((len(rows), n), PAD, dtype=torch.long)
    m = torch.zeros((len(rows), n))
    for i, r in enumerate(rows):
        t[i, : len(r["t"])] = torch.tensor(r["t"])
        m[i, : len(r["m"])] = torch.tensor(r["m"], dtype=torch.float)
    return t.to(dev), m.to(dev)


def lr_at(step, total, base, warm=20):
    if step <= warm:
        return base * step / warm
    p = min(1.0, (step - warm) / max(1, total - warm))
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def turns(positions):
    """Masked positions split into runs of consecutive ones: the model's turns."""
    runs, prev = [], -2
    for p in positions:
        if p != prev + 1:
            runs.append([])
        runs[-1].append(p)
        prev = p
    return runs


@torch.no_grad()
def score(model, held, dev):
    model.eval()
    c = dict(exact=0, call=0, answer=0, chooses_tool=0)
    for i in range(0, len(held), 50):
        rows = held[i : i + 50]
        t, m = batch(rows, dev)
        pred = model(t).logits[:, :-1].argmax(-1)
        for r in range(len(rows)):
            pos = (m[r, 1:] > 0).nonzero().flatten().tolist()
            ok = {p: bool(pred[r, p] == t[r, p + 1]) for p in pos}
            runs = turns(pos)
            c["exact"] += all(ok.values())
            c["call"] += all(ok[p] for p in runs[0][1:])
            c["answer"] += all(ok[p] for p in runs[-1])
            c["chooses_tool"] += ok[pos[0]]
    model.train()
    return {k: v / len(held) for k, v in c.items()}


def train(demos, dev, size, layers, rate, steps, bs, share, seed):
    s = SIZES[size]
    pool = demos["sft"]
    if share is not None:
        tools = [r for r in pool if r["tool"]]
        others = [r for r in pool if not r["tool"]]
        pool = tools + others[: int(len(tools) * (1 - share) / share)]
    cfg = Qwen3Config(vocab_size=VOCAB, hidden_size=s["d"], intermediate_size=s["ff"], num_hidden_layers=layers, num_attention_heads=s["H"], num_key_value_heads=s["kv"],
                      head_dim=s["d"] // s["H"], max_position_embeddings=384, rms_norm_eps=1e-6, attention_bias=False, bos_token_id=EOS, eos_token_id=EOS, pad_token_id=PAD, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=rate, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    started = time.time()
    for step in range(1, steps + 1):
        t, m = batch([pool[i] for i in torch.randint(len(pool), (bs,), generator=g).tolist()], dev)
        lp = torch.log_softmax(model(t).logits[:, :-1].float(), -1).gather(-1, t[:, 1:, None]).squeeze(-1)
        loss = -(lp * m[:, 1:]).sum() / m[:, 1:].sum()
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, rate)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    tool_share = sum(r["tool"] for r in pool) / len(pool)
    return dict(size=size, layers=layers, rate=rate, steps=steps, batch=bs, tool_share=round(tool_share, 2), seed=seed, loss=round(float(loss.detach()), 4), seconds=round(time.time() - started, 1), **score(model, demos["heldout"], dev))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("demos")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="all")
    ap.add_argument("--budget-s", type=float, default=math.inf, help="start no configuration after this many seconds")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    demos = json.load(open(args.demos))
    started = time.time()
    for cfg in GRIDS[args.grid]:
        if time.time() - started > args.budget_s:
            break
        print(json.dumps(train(demos, dev, *cfg)), flush=True)


if __name__ == "__main__":
    main()
