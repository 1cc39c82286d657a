#!/usr/bin/env bash
# Finished main-job runs' RL (and RFT) trained again from their SFT checkpoints with settings changed,
# e.g. a learning rate chosen after they ran: per run, the config of scripts/rl-again-config.ts (the
# run's own, init.fromRun = the run, no SFT and no SFT baselines, then each --set) run with the run's
# seed; then the new RL against the run's SFT only, more SFT and filtered SFT (which do not depend on
# RL) and the new RFT, paired by seed (scripts/summarize-paired-runs.ts).
#   bash scripts/rl-again.sh [--set rl.learningRate=0.00003 ...] <main-job run id> [...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/from-run.sh
sets=()
while [ $# -gt 0 ] && [ "$1" = --set ]; do sets+=(--set "$2"); shift 2; done
[ $# -gt 0 ] || { echo "usage: bash scripts/rl-again.sh [--set <path>=<value> ...] <main-job run id> [...]" >&2; exit 2; }
bash scripts/setup.sh
mkdir -p .data/runs
froms=("$@")
configs=()
stamp=$(date +%s)
for from in "${froms[@]}"; do
  # Every config is built (and so checked) before the first run starts, under a name of this
  # study's own (one started beside it with other --set values must not rewrite it).
  cfg=".data/runs/again-from-${from}-${stamp}.json"
  node dist/scripts/rl-again-config.js "$from" "${sets[@]}" > "$cfg"
  configs+=("$cfg")
done
ids=()
for i in "${!configs[@]}"; do
  from="${froms[$i]}"
  cfg="${configs[$i]}"
  seed=$(config_seed "$cfg")
  id="again-s${seed}-$(date +%s)-${from}"
  run_logged "$cfg" "$seed" "$id"
  ids+=("$id")
  grep -q '"rft": true' "$cfg" && ids+=("$id:rft")
  # The run's own policies that do not depend on RL, those it compared.
  for policy in $(node -e 'const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).comparison ?? {};
    process.stdout.write(["sftOnly", "moreSft", "filteredSft"].filter((p) => c[p]).join(" "))' "${DURABLE_RL_RUNS:-.data/runs}/$from.result.json"); do
    ids+=("$from:$policy")
  done
done
# Every compared policy is a baseline (its spec has a ':'), so each line is the new RL minus one of them.
node dist/scripts/summarize-paired-runs.js --baseline ':' "${ids[@]}"
