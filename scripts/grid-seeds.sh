#!/usr/bin/env bash
# The README's grid-world learning results. From the step-400 SFT checkpoint of each given
# `bash scripts/main.sh --config configs/grid-horizons.yaml --seed N` run, one after another:
#   rl             configs/grid-rl-from-run.yaml: the RL of configs/grid-horizons.yaml, with its
#                  baselines (more SFT for as many tokens as RL trained, and RFT);
#   layout-groups  configs/grid-layout-groups-from-run.yaml: RL with the design's layout groups;
#   plan-reward    configs/grid-plan-reward-from-run.yaml: the same with horizon.usePlanReward.
# Then each kind's runs side by side, per plan horizon, with mean, spread and paired differences.
#   bash scripts/grid-seeds.sh 1=<grid-horizons run id> [2=<id> 3=<id> ...]
#   KINDS="layout-groups plan-reward" bash scripts/grid-seeds.sh ...   (some kinds only)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/from-run.sh
[ $# -gt 0 ] || { echo "usage: bash scripts/grid-seeds.sh SEED=<grid-horizons run id> ..." >&2; exit 2; }
kinds=(${KINDS:-rl layout-groups plan-reward})
for kind in "${kinds[@]}"; do
  [ -f "configs/grid-${kind}-from-run.yaml" ] || { echo "unknown kind '$kind' (rl, layout-groups, plan-reward)" >&2; exit 2; }
done
bash scripts/setup.sh
mkdir -p .data/runs
declare -A ids
for pair in "$@"; do
  seed="${pair%%=*}"
  from="${pair#*=}"
  [[ "$seed" =~ ^[0-9]+$ && -n "$from" && "$from" != "$pair" ]] || { echo "bad argument '$pair': expected SEED=<run id>" >&2; exit 2; }
  for kind in "${kinds[@]}"; do
    cfg=$(from_run_config "configs/grid-${kind}-from-run.yaml" "$from")
    id="grid-${kind}-s${seed}-$(date +%s)"
    run_logged "$cfg" "$seed" "$id"
    ids[$kind]="${ids[$kind]:-} $id"
  done
done
for kind in "${kinds[@]}"; do
  echo
  echo "## ${kind}"
  # shellcheck disable=SC2086
  node dist/scripts/summarize-runs.js ${ids[$kind]}
done
