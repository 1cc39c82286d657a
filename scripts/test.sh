#!/usr/bin/env bash
# All tests against a real Temporal dev server; ends with one plain "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
npx eslint . || exit 1
mkdir -p .data
results=.data/jest-results.json
rm -f "$results"
npx jest --json --outputFile="$results" "$@"
code=$?
node -e '
  const r = require(process.argv[1]);
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed`);
' "$PWD/$results" || { echo "0 passed, 1 failed"; exit 1; }
exit $code
