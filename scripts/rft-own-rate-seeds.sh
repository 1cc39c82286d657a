#!/usr/bin/env bash
# RFT at its own validation-chosen learning rate against the main job's RL, seed by seed: for each
# main-job run given (bash scripts/rl-seeds.sh; its <id>.input.json under .data/runs or DURABLE_RL_RUNS
# names its seed), one run of configs/rft-own-rate-from-run.yaml from that run's step-300 SFT
# checkpoint with the same seed (RL at the main job's rate again, RFT at compare.rftLearningRate),
# then the paired differences of the main job's RL, its RFT and this run's RL with RFT at its own
# rate (scripts/summarize-paired-runs.ts).
#   bash scripts/rft-own-rate-seeds.sh <main-job run id> [...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/from-run.sh
[ $# -gt 0 ] || { echo "usage: bash scripts/rft-own-rate-seeds.sh <main-job run id> [...]" >&2; exit 2; }
runs="${DURABLE_RL_RUNS:-.data/runs}"
for from in "$@"; do
  [ -f "$runs/$from.input.json" ] || { echo "$from: no $runs/$from.input.json (was it run by the main job?)" >&2; exit 2; }
done
bash scripts/setup.sh
ids=()
for from in "$@"; do
  input="$runs/$from.input.json"
  seed=$(config_seed "$input")
  cfg=$(from_run_config configs/rft-own-rate-from-run.yaml "$from")
  id="arith-rl-rft-own-rate-s${seed}-$(date +%s)"
  run_logged "$cfg" "$seed" "$id"
  ids+=("$id:rft" "$id" "$from" "$from:rft")
done
node dist/scripts/summarize-paired-runs.js --baseline 'rft-own-rate:rft' "${ids[@]}"
