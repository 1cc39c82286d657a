#!/usr/bin/env bash
# RL with tree rollouts against independent sampling, from the same SFT checkpoint of an earlier
# trainingRun (step 300 of configs/default.yaml's SFT), for each seed given (default 1 2 3 4 5):
#   bash scripts/tree-vs-independent.sh <trainingRun workflow id> [seeds...]
# Runs configs/<kind>-from-run.yaml for each kind in $KINDS (default: independent tree tree-inner
# independent-11; also tree-credit) with init.fromRun set to the id, then prints per run the greedy
# test accuracy before and after RL and the tokens RL generated and trained, per config the mean
# over seeds, and the paired differences with the independent-sampling configs
# (scripts/summarize-tree-runs.ts). independent: about the generated tokens of the tree configs;
# independent-11: the trained samples of tree-inner's 11 leaves.
set -euo pipefail
cd "$(dirname "$0")/.."
from="${1:?usage: bash scripts/tree-vs-independent.sh <trainingRun workflow id> [seeds...]}"
shift
seeds=("$@")
[ $# -eq 0 ] && seeds=(1 2 3 4 5)
bash scripts/setup.sh
mkdir -p .data/runs
ids=()
for seed in "${seeds[@]}"; do
  for kind in ${KINDS:-independent tree tree-inner independent-11}; do
    cfg=".data/runs/${kind}-from-${from}.yaml"
    sed "s/arith-rl-REPLACE-WITH-WORKFLOW-ID/${from}/" "configs/${kind}-from-run.yaml" > "$cfg"
    id="arith-rl-${kind}-s${seed}-$(date +%s)"
    node dist/scripts/main.js --config "$cfg" --seed "$seed" --workflow-id "$id" > ".data/runs/${id}.log" 2>&1
    ids+=("$id")
    echo "finished $id"
  done
done
node dist/scripts/summarize-tree-runs.js "${ids[@]}"
