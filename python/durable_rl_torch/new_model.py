"""`python -m durable_rl_torch.new_model --model '<model.* JSON>' --seed N --out DIR [--tokenizer DIR]`: a
randomly initialised policy of a run's architecture as a Hugging Face directory, over the project's
tokenizer or over a Hugging Face tokenizer directory's (its tokenizer.json and tokenizer_config.json,
chat template included; vocabulary size, eos and pad ids from them). The main job starts vLLM on one
(a placeholder of the run's shape, replaced by the run's weights before every rollout); tests make
Qwen3 and Llama policies with it, and a Qwen3 over the real Qwen3 tokenizer."""
import argparse
import json
from pathlib import Path

from .checkpoints import full_model_files
from .contracts import ModelConfig, parse
from .models import hf_config, new_model, tokenizer_dir_files


def write_new_model(model: ModelConfig, seed: int, out: Path, tokenizer_dir: Path | None = None) -> Path:
    cfg = hf_config(model, tokenizer_dir=tokenizer_dir)
    tokenizer = tokenizer_dir_files(tokenizer_dir, model.maxSeq) if tokenizer_dir is not None else None
    files = full_model_files(new_model(cfg, seed), tokenizer=tokenizer)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    if out.exists():
        for p in out.iterdir():
            p.unlink()
        out.rmdir()
    tmp.rename(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="new_model", description=__doc__)
    parser.add_argument("--model", required=True, help="the run config's model section as JSON")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tokenizer", help="a Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json); default the project's")
    args = parser.parse_args()
    model = parse(ModelConfig, json.loads(args.model), "model")
    print(write_new_model(model, args.seed, Path(args.out), Path(args.tokenizer) if args.tokenizer else None))


if __name__ == "__main__":
    main()
