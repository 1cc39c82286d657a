"""verl's own GRPO functions on given inputs (test/rl/verl-parity.test.ts, test/rl/verl-metrics.test.ts).

Reads {"grpo": [{"scores", "index", "epsilon", "norm"}], "policy": [{"old", "logp", "adv", "mask",
"clip_low", "clip_high", "clip_c", "mode", "scale"}], "kl": [{"logp", "ref", "kind"}]} on stdin and
writes the results of verl.trainer.ppo.core_algos' compute_grpo_outcome_advantage,
compute_policy_loss_vanilla (loss, clipfrac, clipfrac_lower, ppo_kl) and kl_penalty on stdout.
Every key is optional. Two more give the metrics as verl logs them:
- "metrics": [{"steps": [{"old", "logp", "adv", "mask"}], "entropy", "mask", "mode", "scale"}]:
  actor/ppo_kl, compute_policy_loss_vanilla's per mini-batch (one micro-batch each) reduced over the
  steps by verl.utils.metric (Metric, reduce_metrics) as the engine worker and trainer do, and
  actor/entropy, agg_loss of the entropy over the whole batch as ray_trainer's old-log-prob pass does;
- "reward_kl": [{"old", "ref", "mask", "kind", "coef"}]: actor/reward_kl_penalty from
  ray_trainer.apply_kl_penalty (its own source: ray_trainer itself needs packages the environment
  lacks).
"""
import ast
import importlib.util
import json
import sys

import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo import core_algos
from verl.utils.metric import AggregationType, Metric, reduce_metrics
from verl.utils.torch_functional import masked_mean


def apply_kl_penalty_fn():
    """verl.trainer.ppo.ray_trainer.apply_kl_penalty, compiled from the installed file's source."""
    spec = importlib.util.find_spec("verl.trainer.ppo.ray_trainer")
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply_kl_penalty")
    ns = {"torch": torch, "core_algos": core_algos, "masked_mean": masked_mean, "DataProto": DataProto}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), spec.origin, "exec"), ns)
    return ns["apply_kl_penalty"]


def clip_config(clip_low=0.2, clip_high=0.2, clip_c=3.0, batch_info=None):
    return OmegaConf.create(
        {"clip_ratio": 0.2, "clip_ratio_low": clip_low, "clip_ratio_high": clip_high, "clip_ratio_c": clip_c, "global_batch_info": batch_info or {}}
    )


def main() -> None:
    req = json.load(sys.stdin)
    out = {"grpo": [], "policy": [], "kl": [], "metrics": [], "reward_kl": []}
    t = lambda x: torch.tensor(x, dtype=torch.float64)
    for g in req.get("grpo", []):
        scores = torch.tensor(g["scores"], dtype=torch.float64)
        # One-token responses carrying the score: verl sums token rewards into the outcome score.
        rewards = scores.unsqueeze(-1)
        mask = torch.ones_like(rewards)
        adv, _ = core_algos.compute_grpo_outcome_advantage(
            rewards, mask, np.array(g["index"], dtype=object), epsilon=g["epsilon"], norm_adv_by_std_in_grpo=g["norm"]
        )
        out["grpo"].append(adv[:, 0].tolist())
    for p in req.get("policy", []):
        batch_info = {"loss_scale_factor": p["scale"]} if p["mode"] == "seq-mean-token-sum-norm" else {}
        config = clip_config(p["clip_low"], p["clip_high"], p["clip_c"], batch_info)
        loss, metrics = core_algos.compute_policy_loss_vanilla(t(p["old"]), t(p["logp"]), t(p["adv"]), t(p["mask"]), loss_agg_mode=p["mode"], config=config)
        out["policy"].append(
            {"loss": loss.item(), "clipfrac": metrics["actor/pg_clipfrac"], "clipfrac_lower": metrics["actor/pg_clipfrac_lower"], "ppo_kl": metrics["actor/ppo_kl"]}
        )
    for k in req.get("kl", []):
        kl = core_algos.kl_penalty(torch.tensor(k["logp"], dtype=torch.float64), torch.tensor(k["ref"], dtype=torch.float64), k["kind"])
        out["kl"].append(kl.tolist())
    for m in req.get("metrics", []):
        # engine_workers.train_mini_batch: per mini-batch the MEAN Metric of its micro-batches'
        # values (here one each), appended per mini-batch; the trainer's reduce_metrics takes the mean.
        logged = {"actor/ppo_kl": []}
        for step in m["steps"]:
            _, pg = core_algos.compute_policy_loss_vanilla(
                t(step["old"]), t(step["logp"]), t(step["adv"]), t(step["mask"]), loss_agg_mode="token-mean", config=clip_config()
            )
            micro = Metric(AggregationType.MEAN, pg["actor/ppo_kl"])
            logged["actor/ppo_kl"].append(Metric.aggregate_dp([micro]))
        ppo_kl = reduce_metrics(logged)["actor/ppo_kl"]
        entropy = core_algos.agg_loss(loss_mat=t(m["entropy"]), loss_mask=t(m["mask"]), loss_agg_mode=m["mode"], loss_scale_factor=m["scale"])
        out["metrics"].append({"ppo_kl": float(ppo_kl), "entropy": entropy.item()})
    if req.get("reward_kl"):
        apply_kl_penalty = apply_kl_penalty_fn()
        for r in req["reward_kl"]:
            mask = t(r["mask"])
            data = DataProto.from_dict(
                tensors={"response_mask": mask, "token_level_scores": torch.zeros_like(mask), "old_log_probs": t(r["old"]), "ref_log_prob": t(r["ref"])}
            )
            _, metrics = apply_kl_penalty(data, core_algos.FixedKLController(r["coef"]), kl_penalty=r["kind"])
            out["reward_kl"].append(metrics["actor/reward_kl_penalty"])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
