#!/usr/bin/env bash
# The demonstrations' tool-use rate against RL and its baselines: the main job (configs/default.yaml)
# with task.demoToolUseRate set to each rate, run with each seed by scripts/rl-seeds.sh, which ends
# with every compared policy side by side. The default rate, 0.3, is the README's result.
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
grep -q '^  demoToolUseRate: 0.3$' configs/default.yaml || { echo "configs/default.yaml has no 'demoToolUseRate: 0.3' line to replace" >&2; exit 1; }
mkdir -p .data/sweep
for rate in ${rates//,/ }; do
  # The main job's config with only the rate (and the experiment's name) changed.
  config=".data/sweep/tool-rate-${rate}.yaml"
  sed -e "s/^  demoToolUseRate: 0.3$/  demoToolUseRate: ${rate}/" -e "s/^experiment: arith-rl$/experiment: arith-rl-tools-${rate}/" configs/default.yaml > "$config"
  echo "=== task.demoToolUseRate ${rate} ==="
  bash scripts/rl-seeds.sh --config "$config" --seeds "$seeds"
done
