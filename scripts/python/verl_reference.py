"""verl's own GRPO functions on given inputs (test/rl/verl-parity.test.ts).

Reads {"grpo": [{"scores", "index", "epsilon", "norm"}], "policy": [{"old", "logp", "adv", "mask",
"clip_low", "clip_high", "clip_c", "mode", "scale"}], "kl": [{"logp", "ref", "kind"}]} on stdin and
writes the results of verl.trainer.ppo.core_algos' compute_grpo_outcome_advantage,
compute_policy_loss_vanilla (loss, clipfrac, clipfrac_lower, ppo_kl) and kl_penalty on stdout.
"""
import json
import sys

import numpy as np
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo import core_algos


def main() -> None:
    req = json.load(sys.stdin)
    out = {"grpo": [], "policy": [], "kl": []}
    for g in req["grpo"]:
        scores = torch.tensor(g["scores"], dtype=torch.float64)
        # One-token responses carrying the score: verl sums token rewards into the outcome score.
        rewards = scores.unsqueeze(-1)
        mask = torch.ones_like(rewards)
        adv, _ = core_algos.compute_grpo_outcome_advantage(
            rewards, mask, np.array(g["index"], dtype=object), epsilon=g["epsilon"], norm_adv_by_std_in_grpo=g["norm"]
        )
        out["grpo"].append(adv[:, 0].tolist())
    for p in req["policy"]:
        t = lambda x: torch.tensor(x, dtype=torch.float64)
        batch_info = {"loss_scale_factor": p["scale"]} if p["mode"] == "seq-mean-token-sum-norm" else {}
        config = OmegaConf.create(
            {"clip_ratio": 0.2, "clip_ratio_low": p["clip_low"], "clip_ratio_high": p["clip_high"], "clip_ratio_c": p["clip_c"], "global_batch_info": batch_info}
        )
        loss, metrics = core_algos.compute_policy_loss_vanilla(t(p["old"]), t(p["logp"]), t(p["adv"]), t(p["mask"]), loss_agg_mode=p["mode"], config=config)
        out["policy"].append(
            {"loss": loss.item(), "clipfrac": metrics["actor/pg_clipfrac"], "clipfrac_lower": metrics["actor/pg_clipfrac_lower"], "ppo_kl": metrics["actor/ppo_kl"]}
        )
    for k in req["kl"]:
        kl = core_algos.kl_penalty(torch.tensor(k["logp"], dtype=torch.float64), torch.tensor(k["ref"], dtype=torch.float64), k["kind"])
        out["kl"].append(kl.tolist())
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
