"""The update's arithmetic: micro-batching, row skipping and the masked output head change nothing but memory."""
import copy

import pytest
import torch

from durable_rl_torch.contracts import RlConfig, MicroBatchConfig
from durable_rl_torch.grpo import run_grpo_update
from durable_rl_torch.pg_batch import PgBatch
from durable_rl_torch.trainer import AdamW, masked_logprobs, pack, sequence_logprobs, shifted, train_step

from helpers import CPU, rollout, tiny_model


class RecordingAdamW(AdamW):
    """Keeps each step's summed gradient: what micro-batching must not change (Adam's first step
    amplifies a near-zero gradient's rounding to a step of about ±lr, so weights are no measure)."""

    grads: list[dict[str, torch.Tensor]]

    def apply(self, lr: float) -> float:
        self.grads = [*getattr(self, "grads", []), {n: p.grad.detach().clone() for n, p in self.named if p.grad is not None}]
        return super().apply(lr)


def grad_diff(a: RecordingAdamW, b: RecordingAdamW) -> float:
    return max(float((x[k] - y[k]).abs().max()) for x, y in zip(a.grads, b.grads) for k in x)


def test_pack_aligns_targets_with_the_next_token():
    p = pack([[5, 6, 7, 8], [9, 10]], 16, torch.device("cpu"))
    assert p.ids.tolist() == [[5, 6, 7], [9, 10, 0]]
    assert p.targets.tolist() == [[6, 7, 8], [10, 0, 0]]
    assert shifted([[0, 1, 1, 0], [0, 1]], 2, 3, torch.device("cpu")).tolist() == [[1, 1, 0], [1, 0, 0]]


def test_the_masked_head_gives_the_full_softmax_logprobs():
    model = tiny_model()
    rows = [[3, 4, 5, 6, 7, 8], [9, 10, 11]]
    p = pack(rows, 64, torch.device("cpu"))
    mask = torch.ones(p.ids.shape)
    logp, entropy = masked_logprobs(model, p, mask, CPU, temperature=0.7, want_entropy=True)
    lsm = torch.log_softmax(model(input_ids=p.ids).logits / 0.7, -1)
    want = lsm.gather(-1, p.targets.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(logp[0], want[0], atol=1e-5)
    assert torch.allclose(logp[1, :2], want[1, :2], atol=1e-5)
    assert torch.allclose(entropy[0], -(lsm.exp() * lsm).sum(-1)[0], atol=1e-5)
    lp = sequence_logprobs(model, rows, [[0, 1, 1, 0, 1, 1], [1, 1, 1]], 64, CPU, temperature=0.7)
    assert lp[0][0] == 0 and lp[0][3] == 0 and lp[0][1] == pytest.approx(float(want[0, 0].detach()), abs=1e-5)


@pytest.mark.parametrize("pg_loss", [False, True])
def test_micro_batches_sum_to_the_whole_batch(pg_loss: bool):
    from durable_rl_torch.losses import PgLossOptions

    samples = rollout(groups=2, size=4)
    batch = PgBatch(
        tokens=[s["promptTokens"] + s["responseTokens"] for s in samples],
        loss_mask=[[0.0] * len(s["promptTokens"]) + s["lossMask"] for s in samples],
        advantages=[1.0, -1.0, 0.5, 0.0, 0.0, 2.0, -0.5, 1.0] if pg_loss else None,
        old_logprobs=[[0.0] * len(s["promptTokens"]) + s["logprobs"] for s in samples] if pg_loss else None,
    )
    pg = PgLossOptions(clip_low=0.2, clip_high=0.28, entropy_coeff=0.01) if pg_loss else None
    results = []
    for rows, by_length in [(None, False), (1, False), (3, True)]:
        model = tiny_model(seed=1)
        opt = RecordingAdamW(model, 1e-2, 1.0)
        r = train_step(model, copy.deepcopy(batch), opt, 1e-2, max_seq=64, where=CPU, pg=pg, micro_batch_rows=rows, by_length=by_length)
        results.append((r, opt))
    for r, opt in results[1:]:
        assert r.loss == pytest.approx(results[0][0].loss, abs=1e-6)
        assert r.grad_norm == pytest.approx(results[0][0].grad_norm, rel=1e-5)
        assert grad_diff(opt, results[0][1]) < 1e-7


def test_rows_of_advantage_zero_skip_the_backward_pass_without_changing_the_update():
    samples = rollout(groups=3, size=3, seed=4)
    for s in samples[:3]:
        s["reward"] = 1.0  # a flat group: advantage 0 for its three rows
    rl = RlConfig(ppoEpochs=1, miniBatches=1, learningRate=1e-2, microBatch=MicroBatchConfig(rows=2, byLength=True))
    model = tiny_model(seed=2)
    opt = RecordingAdamW(model, 1e-2, 1.0)
    out = run_grpo_update(model, opt, samples, rl, max_seq=64, where=CPU, seed=1)
    assert out.numbers["flatGroups"] == 1
    # The same update with an entropy bonus of 0 written as a tiny one runs every row backwards.
    model2 = tiny_model(seed=2)
    rl2 = RlConfig(ppoEpochs=1, miniBatches=1, learningRate=1e-2, entropyCoeff=1e-30, microBatch=MicroBatchConfig(rows=2, byLength=True))
    opt2 = RecordingAdamW(model2, 1e-2, 1.0)
    out2 = run_grpo_update(model2, opt2, samples, rl2, max_seq=64, where=CPU, seed=1)
    assert out.numbers["tokensRun"] < out2.numbers["tokensRun"]
    assert out.numbers["entropy"] == pytest.approx(out2.numbers["entropy"], rel=1e-5)
    assert out.numbers["gradNorm"] == pytest.approx(out2.numbers["gradNorm"], rel=1e-5)
    assert grad_diff(opt, opt2) < 1e-7


@pytest.mark.parametrize("chunk", [1024, 4])
def test_the_output_head_runs_in_the_trainers_dtype(monkeypatch: pytest.MonkeyPatch, chunk: int):
    """Under bfloat16 the head's matmul (a quarter of a Qwen3-0.6B update's FLOPs) runs in bfloat16 like
    the decoder's, also when its chunks are recomputed in the backward pass; it ran in float32 before."""
    import durable_rl_torch.losses as losses
    from durable_rl_torch.models import Placement

    monkeypatch.setattr(losses, "HEAD_CHUNK", chunk)
    model = tiny_model("qwen3")
    head = model.get_output_embeddings().weight
    dtypes: list[torch.dtype] = []
    linear = torch.nn.functional.linear

    def spy(x: torch.Tensor, w: torch.Tensor, *rest: object) -> torch.Tensor:
        out = linear(x, w, *rest)
        if w is head:
            dtypes.append(out.dtype)
        return out

    monkeypatch.setattr(torch.nn.functional, "linear", spy)
    p = pack([[3, 4, 5, 6, 7, 8, 9, 10], [11, 12, 13]], 64, torch.device("cpu"))
    logp, _ = masked_logprobs(model, p, torch.ones(p.ids.shape), Placement(torch.device("cpu"), torch.bfloat16), want_entropy=True)
    assert logp.dtype == torch.float32
    logp.sum().backward()
    assert head.grad is not None and head.grad.dtype == torch.float32
    chunks = -(-p.rows * p.len // chunk)
    assert len(dtypes) == (1 if chunk == 1024 else 2 * chunks)  # forward chunks (and, checkpointed, their recomputation)
    assert set(dtypes) == {torch.bfloat16}
