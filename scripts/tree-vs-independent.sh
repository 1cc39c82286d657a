#!/usr/bin/env bash
# RL with tree rollouts against independent sampling, from the same SFT checkpoint of an earlier
# trainingRun (step 300 of configs/default.yaml's SFT), for each seed given (default 1 2 3 4 5):
#   bash scripts/tree-vs-independent.sh [--set path=value ...] <trainingRun workflow id> [seeds...]
# Runs configs/<kind>-from-run.yaml for each kind in $KINDS (default: independent tree tree-inner
# independent-11; also tree-credit), then prints per run the greedy test accuracy before and after
# RL and the tokens RL generated and trained, per config the mean over seeds, and the paired
# differences with the independent-sampling configs (scripts/from-run-seeds.sh). independent: about
# the generated tokens of the tree configs; independent-11: the trained samples of tree-inner's 11 leaves.
set -euo pipefail
KINDS="${KINDS:-independent tree tree-inner independent-11}" BASELINE=independent \
  exec bash "$(dirname "$0")/from-run-seeds.sh" "${@:?usage: bash scripts/tree-vs-independent.sh [--set path=value ...] <trainingRun workflow id> [seeds...]}"
