"""Reference answers from Hugging Face transformers for a model directory (test/model/hf-export.test.ts).

Reads a JSON request on stdin: {"dir": ..., "ids": [[...], ...], "texts": [...], "chats": [[messages], ...]}
and writes {"logits": [[[...V floats] per position] per row], "encoded": [[ids] per text],
"rendered": [text per chat]} on stdout: GPT2LMHeadModel's float32 logits, the tokenizer's ids
(no special tokens added) and the chat template's rendering.
"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> None:
    req = json.load(sys.stdin)
    model = AutoModelForCausalLM.from_pretrained(req["dir"], dtype=torch.float32)
    model.eval()
    tok = AutoTokenizer.from_pretrained(req["dir"])
    out = {"architecture": type(model).__name__, "logits": [], "encoded": [], "rendered": []}
    with torch.no_grad():
        for ids in req.get("ids", []):
            logits = model(input_ids=torch.tensor([ids])).logits[0]
            out["logits"].append(logits.tolist())
    for text in req.get("texts", []):
        out["encoded"].append(tok.encode(text, add_special_tokens=False))
    for chat in req.get("chats", []):
        out["rendered"].append(tok.apply_chat_template(chat, tokenize=False))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
