#!/usr/bin/env bash
# Training on merged timelines against one sample per policy call (docs/timelines.md): the main job's
# RL from the same SFT checkpoint of an earlier trainingRun, configs/timelines-merged-from-run.yaml
# and configs/timelines-per-call-from-run.yaml, for each seed given (default 1 2 3 4 5), then the
# test accuracy, the samples, tokens and trainer seconds each trained, and the paired differences
# (scripts/from-run-seeds.sh).
#   bash scripts/timelines-seeds.sh [--set path=value ...] <trainingRun workflow id> [seeds...]
set -euo pipefail
KINDS="timelines-merged timelines-per-call" BASELINE=per-call \
  exec bash "$(dirname "$0")/from-run-seeds.sh" "${@:?usage: bash scripts/timelines-seeds.sh [--set path=value ...] <trainingRun workflow id> [seeds...]}"
