#!/usr/bin/env bash
# RL with tree rollouts against independent sampling at about equal generated tokens, from the same
# SFT checkpoint of an earlier main-job run, for each seed given (default 1 2 3):
#   bash scripts/tree-vs-independent.sh <trainingRun workflow id> [seeds...]
# Runs configs/<kind>-from-run.yaml for each kind in $KINDS (default: tree independent; also
# tree-credit) with init.fromRun set to the id, then prints per run the held-out greedy accuracy at
# RL steps 0 and 16 and the generated tokens.
set -euo pipefail
cd "$(dirname "$0")/.."
from="${1:?usage: bash scripts/tree-vs-independent.sh <trainingRun workflow id> [seeds...]}"
shift
seeds=("$@")
[ $# -eq 0 ] && seeds=(1 2 3)
bash scripts/setup.sh
mkdir -p .data/runs
ids=()
for seed in "${seeds[@]}"; do
  for kind in ${KINDS:-tree independent}; do
    cfg=".data/runs/${kind}-from-${from}.yaml"
    sed "s/arith-rl-REPLACE-WITH-WORKFLOW-ID/${from}/" "configs/${kind}-from-run.yaml" > "$cfg"
    id="arith-rl-${kind}-s${seed}-$(date +%s)"
    node dist/scripts/main.js --config "$cfg" --seed "$seed" --workflow-id "$id" > ".data/runs/${id}.log" 2>&1
    ids+=("$id")
    echo "finished $id"
  done
done
node -e '
const fs = require("fs");
console.log("| run | greedy @0 | greedy @16 | sampled @16 | generated tokens (16 steps) |");
console.log("|---|---:|---:|---:|---:|");
for (const id of process.argv.slice(1)) {
  const lines = fs.readFileSync(`.data/runs/${id}/metrics.jsonl`, "utf8").trim().split("\n").map(JSON.parse);
  const evals = lines.filter((l) => l.kind === "eval" && l.phase === "rl");
  const at = (s) => evals.find((e) => e.step === s);
  const tokens = lines.filter((l) => l.kind === "rl").reduce((n, l) => n + (l.tree ? l.tree.generatedTokens : 0), 0);
  const pct = (x) => (x === undefined ? "-" : (100 * x).toFixed(1) + "%");
  console.log(`| ${id} | ${pct(at(0)?.greedyAccuracy)} | ${pct(at(16)?.greedyAccuracy)} | ${pct(at(16)?.sampledAccuracy)} | ${tokens} |`);
}
' "${ids[@]}"
