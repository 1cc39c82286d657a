#!/usr/bin/env bash
# The dual-mode comparison over seeds (docs/plan-act.md): for each seed, the main job
# (configs/default.yaml unless --config is given), then scripts/dual-compare.ts from its SFT
# checkpoint; at the end the table over all seeds, with the main job's own baselines beside it.
# A seed at a time, so the seeds already finished are whole if the machine stops.
#   bash scripts/dual-compare-seeds.sh [--config configs/<file>.yaml] [--seeds 1,2,3,4,5]
# Each main job's output goes to .data/runs/<id>.log, each comparison's to .data/runs/<id>-dual-cmp.log.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/from-run.sh
config=configs/default.yaml
seeds=1,2,3,4,5
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="${2:?--config needs a file}"; shift 2 ;;
    --seeds) seeds="${2:?--seeds needs a list such as 1,2,3}"; shift 2 ;;
    *) echo "unknown option $1 (use --config FILE, --seeds 1,2,3)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
mkdir -p .data/runs
stamp=$(date -u +%Y%m%dT%H%M%SZ)
ids=()
for seed in ${seeds//,/ }; do
  id="rl-seed${seed}-${stamp}"
  run_logged "$config" "$seed" "$id"
  node dist/scripts/dual-compare.js --from-run "$id" > ".data/runs/${id}-dual-cmp.log" 2>&1 ||
    { echo "the comparison from $id failed: see .data/runs/${id}-dual-cmp.log" >&2; exit 1; }
  echo "compared $id"
  ids+=("$id")
done
ids_csv=$(IFS=,; echo "${ids[*]}")
node dist/scripts/dual-compare.js --summarize "$ids_csv"
