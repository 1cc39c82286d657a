#!/usr/bin/env bash
# Learning rates chosen per method on validation (docs/main-job.md): configs/tune-from-run.yaml from
# the given run's SFT checkpoint with each pair of rl.learningRate (RL, and RFT, which shares RL's
# optimiser settings) and sft.learningRate (filtered SFT), run with each seed by scripts/rl-seeds.sh,
# which ends each pair with its summary (scripts/summarize-runs.ts): every compared policy's
# validation accuracy per seed and the mean over the seeds. The test split is not touched.
# RFT shares RL's rate and more SFT (not run here) filtered SFT's: a choice made here applies to both.
#   bash scripts/tune-lr.sh --from-run <id> [--lrs 0.0001:0.001,0.0003:0.003,0.001:0.01] [--seeds 1,2]
set -euo pipefail
cd "$(dirname "$0")/.."
from=""
lrs=0.0001:0.001,0.0003:0.003,0.001:0.01
seeds=1,2
while [ $# -gt 0 ]; do
  case "$1" in
    --from-run) from="$2"; shift 2 ;;
    --lrs) lrs="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    *) echo "unknown option $1 (use --from-run ID, --lrs RL:SFT,..., --seeds 1,2)" >&2; exit 2 ;;
  esac
done
[ -n "$from" ] || { echo "usage: bash scripts/tune-lr.sh --from-run <trainingRun workflow id> [--lrs RL:SFT,...] [--seeds 1,2]" >&2; exit 2; }
base=configs/tune-from-run.yaml
for pair in ${lrs//,/ }; do
  [[ "$pair" =~ ^[0-9][0-9.e-]*:[0-9][0-9.e-]*$ ]] || { echo "bad pair '$pair' in --lrs: expected RL_LR:SFT_LR" >&2; exit 2; }
done
mkdir -p .data/sweep
for pair in ${lrs//,/ }; do
  rl="${pair%%:*}"
  sft="${pair#*:}"
  config=".data/sweep/tune-rl${rl}-sft${sft}.yaml"
  # Each rate only inside its own section (rl: or sft:), so one pair's value cannot match the other's line.
  sed -e "/^rl:/,/^[a-z]/s/^  learningRate: .*/  learningRate: ${rl}/" -e "/^sft:/,/^[a-z]/s/^  learningRate: .*/  learningRate: ${sft}/" \
    -e "s/^experiment: arith-rl-tune$/experiment: arith-rl-tune-rl${rl}-sft${sft}/" "$base" > "$config"
  [ "$(grep -c "^  learningRate: " "$config")" = 2 ] && grep -q "^experiment: arith-rl-tune-rl${rl}-sft${sft}$" "$config" \
    && [ "$(sed -n '/^rl:/,/^[a-z]/p' "$config" | grep -c "^  learningRate: ${rl}$")" = 1 ] \
    && [ "$(sed -n '/^sft:/,/^[a-z]/p' "$config" | grep -c "^  learningRate: ${sft}$")" = 1 ] \
    || { echo "$config: the learning rates or the experiment name were not set as asked (is $base as expected?)" >&2; exit 1; }
  echo "=== rl.learningRate ${rl}, sft.learningRate ${sft} ==="
  bash scripts/rl-seeds.sh --config "$config" --seeds "$seeds" --from-run "$from"
done
