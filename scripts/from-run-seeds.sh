#!/usr/bin/env bash
# RL configs compared from the same checkpoint of an earlier trainingRun, seed by seed: for each seed
# given (default 1 2 3 4 5) and each kind in $KINDS, configs/<kind>-from-run.yaml with init.fromRun
# set to the id; then per run the test accuracy before and after RL and what RL trained, per config
# the mean over seeds, and the paired differences with the configs whose name contains $BASELINE
# (scripts/summarize-paired-runs.ts).
# Each --set path=value changes that setting in every kind's config (scripts/config-set.ts), e.g. a
# learning rate chosen after the configs were written.
#   KINDS="tree independent" BASELINE=independent bash scripts/from-run-seeds.sh [--set path=value ...] <trainingRun workflow id> [seeds...]
# The studies call it with their kinds: scripts/tree-vs-independent.sh, scripts/timelines-seeds.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/from-run.sh
usage="usage: KINDS=\"<kind> ...\" BASELINE=<name part> bash scripts/from-run-seeds.sh [--set path=value ...] <trainingRun workflow id> [seeds...]"
sets=()
while [ $# -gt 0 ] && [ "$1" = --set ]; do sets+=(--set "${2:?$usage}"); shift 2; done
from="${1:?$usage}"
shift
case "$from" in -*) echo "$from: not a workflow id ($usage)" >&2; exit 2 ;; esac
for seed in "$@"; do
  [[ "$seed" =~ ^[0-9]+$ ]] || { echo "seed '$seed' is not a whole number ($usage)" >&2; exit 2; }
done
: "${KINDS:?$usage}" "${BASELINE:?$usage}"
baselines=0
for kind in $KINDS; do
  [ -f "configs/${kind}-from-run.yaml" ] || { echo "unknown kind '$kind': no configs/${kind}-from-run.yaml" >&2; exit 2; }
  grep -q "^experiment: .*${BASELINE}" "configs/${kind}-from-run.yaml" && baselines=$((baselines + 1))
done
[ "$baselines" -gt 0 ] || { echo "BASELINE=$BASELINE: no kind's experiment name in \$KINDS ($KINDS) contains it" >&2; exit 2; }
seeds=("$@")
[ $# -eq 0 ] && seeds=(1 2 3 4 5)
bash scripts/setup.sh
mkdir -p .data/runs
# Every kind's config is built and checked before the first run starts, under a name of this study's
# own (a study started beside it with other --set values must not rewrite it).
stamp=$(date +%s)
declare -A configs
for kind in $KINDS; do
  yaml=$(from_run_config "configs/${kind}-from-run.yaml" "$from")
  configs[$kind]="${yaml%.yaml}-${stamp}.json"
  node dist/scripts/config-set.js "$yaml" "${sets[@]}" > "${configs[$kind]}"
done
ids=()
for seed in "${seeds[@]}"; do
  for kind in $KINDS; do
    id="arith-rl-${kind}-s${seed}-$(date +%s)"
    run_logged "${configs[$kind]}" "$seed" "$id"
    ids+=("$id")
  done
done
node dist/scripts/summarize-paired-runs.js --baseline "$BASELINE" "${ids[@]}"
