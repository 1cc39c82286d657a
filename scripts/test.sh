#!/usr/bin/env bash
# All tests against a real Temporal dev server (jest), and the torch worker's own tests (pytest, on the
# project's Python environment); ends with one plain "N passed, N failed" line counting both.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
npx eslint . || exit 1
mkdir -p .data
results=.data/jest-results.json
pyresults=.data/pytest-results.xml
rm -f "$results" "$pyresults"
npx jest --json --outputFile="$results" "$@"
code=$?
python="$(node -e 'console.log(require("./dist/scripts/lib/python-env").pythonBin())')" || exit 1
(cd python && "$python" -m pytest -q -p no:cacheprovider --junitxml="../$pyresults" tests)
pycode=$?
node -e '
  const fs = require("fs");
  const r = fs.existsSync(process.argv[1]) ? require(process.argv[1]) : { numPassedTests: 0, numFailedTests: 1 };
  let passed = r.numPassedTests, failed = r.numFailedTests;
  // pytest: <testsuite tests= failures= errors= skipped=>; an unreadable report counts as one failure.
  const xml = fs.existsSync(process.argv[2]) ? fs.readFileSync(process.argv[2], "utf8") : "";
  const suite = /<testsuite [^>]*>/.exec(xml)?.[0];
  const attr = (name) => Number(new RegExp(` ${name}="(\\d+)"`).exec(suite ?? "")?.[1] ?? 0);
  if (!suite) failed += 1;
  else {
    const bad = attr("failures") + attr("errors");
    passed += attr("tests") - bad - attr("skipped");
    failed += bad;
  }
  console.log(`${passed} passed, ${failed} failed`);
' "$PWD/$results" "$PWD/$pyresults" || { echo "0 passed, 1 failed"; exit 1; }
[ "$code" = 0 ] && [ "$pycode" = 0 ]
