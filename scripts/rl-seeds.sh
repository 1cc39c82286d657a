#!/usr/bin/env bash
# The README's learning result: the main job (configs/default.yaml unless --config is given) with
# seeds 1-5, one after another, then every compared policy side by side: means, spread and RL's paired differences.
#   bash scripts/rl-seeds.sh [--config configs/<file>.yaml] [--seeds 1,2,3,4,5]
set -euo pipefail
cd "$(dirname "$0")/.."
config=configs/default.yaml
seeds=1,2,3,4,5
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    *) echo "unknown option $1 (use --config FILE, --seeds 1,2,3)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
stamp=$(date -u +%Y%m%dT%H%M%SZ)
ids=()
for seed in ${seeds//,/ }; do
  id="rl-seed${seed}-${stamp}"
  node dist/scripts/main.js --config "$config" --seed "$seed" --workflow-id "$id"
  ids+=("$id")
done
node dist/scripts/summarize-runs.js "${ids[@]}"
