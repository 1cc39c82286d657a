"""durable-rl's PyTorch training worker.

Serves the training activities of the TypeScript contract (activities/training.ts, src/contracts/) on
a task queue of its own, for any Hugging Face causal LM: full fine-tuning and LoRA (peft), float32 on
CPU and bfloat16 on CUDA. The TypeScript types are the one source of truth for activity names and
payloads; contracts.py mirrors them and a contract test holds the two together.
"""
