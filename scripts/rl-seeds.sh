#!/usr/bin/env bash
# The README's learning result: the main job (configs/default.yaml unless --config is given) with
# seeds 1-5, one after another, then every compared policy side by side: means, spread and RL's paired differences.
#   bash scripts/rl-seeds.sh [--config configs/<file>.yaml] [--seeds 1,2,3,4,5] [--from-run <id>]
# --from-run fills a *-from-run.yaml config's init.fromRun (its <name>-REPLACE-WITH-WORKFLOW-ID)
# with an earlier trainingRun's workflow id, so every seed starts from that run's checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/from-run.sh
config=configs/default.yaml
seeds=1,2,3,4,5
from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --from-run) from="$2"; shift 2 ;;
    *) echo "unknown option $1 (use --config FILE, --seeds 1,2,3, --from-run ID)" >&2; exit 2 ;;
  esac
done
if [ -n "$from" ]; then
  config=$(from_run_config "$config" "$from") || { echo "--from-run needs a *-from-run.yaml config" >&2; exit 2; }
fi
bash scripts/setup.sh
stamp=$(date -u +%Y%m%dT%H%M%SZ)
ids=()
for seed in ${seeds//,/ }; do
  id="rl-seed${seed}-${stamp}"
  node dist/scripts/main.js --config "$config" --seed "$seed" --workflow-id "$id"
  ids+=("$id")
done
node dist/scripts/summarize-runs.js "${ids[@]}"
