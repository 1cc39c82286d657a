#!/usr/bin/env bash
# The demonstrations' tool-use rate against RL and its baselines: the main job (configs/default.yaml)
# with task.demoToolUseRate set to each rate and run with each seed, then per rate every compared
# policy side by side (scripts/summarize-runs.ts). The default rate, 0.3, is the README's result.
#   bash scripts/tool-rate-sweep.sh [--rates 0.1,0.5,1] [--seeds 1,2,3]
set -euo pipefail
cd "$(dirname "$0")/.."
rates=0.1,0.5,1
seeds=1,2,3
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) rates="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    *) echo "unknown option $1 (use --rates 0.1,0.5,1 --seeds 1,2,3)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p .data/sweep
for rate in ${rates//,/ }; do
  config=".data/sweep/tool-rate-${rate}.yaml"
  # The main job's config with only the rate (and the experiment's name) changed.
  grep -q '^  demoToolUseRate: 0.3$' configs/default.yaml || { echo "configs/default.yaml has no 'demoToolUseRate: 0.3' line to replace" >&2; exit 1; }
  sed -e "s/^  demoToolUseRate: 0.3$/  demoToolUseRate: ${rate}/" -e "s/^experiment: arith-rl$/experiment: arith-rl-tools-${rate}/" configs/default.yaml > "$config"
  ids=()
  for seed in ${seeds//,/ }; do
    id="tools-${rate}-seed${seed}-${stamp}"
    node dist/scripts/main.js --config "$config" --seed "$seed" --workflow-id "$id"
    ids+=("$id")
  done
  echo "=== task.demoToolUseRate ${rate} ==="
  node dist/scripts/summarize-runs.js "${ids[@]}"
done
