#!/usr/bin/env bash
# RL on the grid world with the plan reward (configs/grid-plan-reward-from-run.yaml), from the SFT
# checkpoint of a finished `bash scripts/main.sh --config configs/grid-horizons.yaml --seed N` run,
# then success per plan horizon side by side with that run's own RL (plan reward off):
#   bash scripts/grid-plan-reward.sh <grid-horizons workflow id> [seed]
set -euo pipefail
cd "$(dirname "$0")/.."
from="${1:?usage: bash scripts/grid-plan-reward.sh <grid-horizons workflow id> [seed]}"
seed="${2:-1}"
bash scripts/setup.sh
mkdir -p .data/runs
cfg=".data/runs/grid-plan-reward-from-${from}.yaml"
sed "s/grid-horizons-REPLACE-WITH-WORKFLOW-ID/${from}/" configs/grid-plan-reward-from-run.yaml > "$cfg"
id="grid-plan-reward-s${seed}-$(date +%s)"
node dist/scripts/main.js --config "$cfg" --seed "$seed" --workflow-id "$id"
node dist/scripts/summarize-runs.js "$from" "$id"
