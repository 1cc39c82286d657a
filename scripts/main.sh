#!/usr/bin/env bash
# The main job: set up, start the dev server and workers, run the default training run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node dist/scripts/main.js "$@"
