#!/usr/bin/env bash
# The README's grid-world learning result. From the step-400 SFT checkpoint of each given
# `bash scripts/main.sh --config configs/grid-horizons.yaml --seed N` run, one after another:
# RL with configs/grid-rl-from-run.yaml (plus its more-SFT baseline: the same checkpoint given RL's
# wall time of further SFT), then the same RL with the plan reward
# (configs/grid-plan-reward-from-run.yaml). Then both sets side by side, per plan horizon, with
# mean and spread over the seeds.
#   bash scripts/grid-seeds.sh 1=<grid-horizons run id> [2=<id> 3=<id> ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: bash scripts/grid-seeds.sh SEED=<grid-horizons run id> ..." >&2; exit 2; }
bash scripts/setup.sh
mkdir -p .data/runs
rl=()
planReward=()
for pair in "$@"; do
  seed="${pair%%=*}"
  from="${pair#*=}"
  [[ "$seed" =~ ^[0-9]+$ && -n "$from" && "$from" != "$pair" ]] || { echo "bad argument '$pair': expected SEED=<run id>" >&2; exit 2; }
  for kind in rl plan-reward; do
    cfg=".data/runs/grid-${kind}-from-${from}.yaml"
    sed "s/grid-horizons-REPLACE-WITH-WORKFLOW-ID/${from}/" "configs/grid-${kind}-from-run.yaml" > "$cfg"
    id="grid-${kind}-s${seed}-$(date +%s)"
    node dist/scripts/main.js --config "$cfg" --seed "$seed" --workflow-id "$id" > ".data/runs/${id}.log" 2>&1
    echo "finished $id"
    if [ "$kind" = rl ]; then rl+=("$id"); else planReward+=("$id"); fi
  done
done
echo "## RL (layout-horizon groups, no plan reward) against SFT only and more SFT"
node dist/scripts/summarize-runs.js "${rl[@]}"
echo
echo "## The same RL with the plan reward"
node dist/scripts/summarize-runs.js "${planReward[@]}"
