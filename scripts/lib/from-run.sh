# Sourced by the scripts that run configs from an earlier trainingRun's checkpoint
# (rl-seeds.sh --from-run, from-run-seeds.sh, grid-seeds.sh, rft-own-rate-seeds.sh, rl-again.sh).

# from_run_config CONFIG RUN_ID: prints the path of a copy of CONFIG under .data/runs/ whose
# init.fromRun placeholder (arith-rl-REPLACE-WITH-WORKFLOW-ID, grid-horizons-REPLACE-WITH-WORKFLOW-ID,
# ...) is RUN_ID; fails naming CONFIG when it has no placeholder.
from_run_config() {
  local config="$1" from="$2"
  grep -q -- '-REPLACE-WITH-WORKFLOW-ID' "$config" || {
    echo "$config has no init.fromRun placeholder (<name>-REPLACE-WITH-WORKFLOW-ID)" >&2
    return 2
  }
  mkdir -p .data/runs
  local out
  out=".data/runs/$(basename "$config" .yaml)-from-${from}.yaml"
  sed "s/[a-z0-9-]*-REPLACE-WITH-WORKFLOW-ID/${from}/" "$config" > "$out"
  echo "$out"
}

# config_seed FILE: the seed of a JSON run config (a run's <id>.input.json, say).
config_seed() {
  node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).seed))' "$1"
}

# run_logged CONFIG SEED WORKFLOW_ID: one run of the main job's CLI, its output in .data/runs/<id>.log.
# A failure says where its log is (the terminal shows nothing else of the run).
run_logged() {
  node dist/scripts/main.js --config "$1" --seed "$2" --workflow-id "$3" > ".data/runs/$3.log" 2>&1 ||
    { echo "$3 failed: see .data/runs/$3.log" >&2; return 1; }
  echo "finished $3"
}
