#!/usr/bin/env bash
# Idempotent setup shared by the README's two commands: npm packages from the registry,
# the Temporal CLI built from the Go module proxy (cached outside the clone), and the build.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_CLI_VERSION=1.5.1
CACHE_DIR="${DURABLE_RL_CACHE:-$HOME/.cache/durable-rl}"
TEMPORAL_BIN="$CACHE_DIR/temporal-cli-v$TEMPORAL_CLI_VERSION/temporal"
# The S3-compatible server of the S3 blob store's tests, bench:scale and the local multi-process
# deployment (scripts/lib/s3-server.ts): S3 over a local folder. Keep in step with VERSITYGW_VERSION there.
VERSITYGW_VERSION=v1.8.0
VERSITYGW_BIN="$CACHE_DIR/versitygw-$VERSITYGW_VERSION/versitygw"

# onnxruntime-node's install script would try to download the CUDA add-on; its CPU binary ships inside.
export ONNXRUNTIME_NODE_INSTALL=skip
# npm install, not npm ci: npm 11 leaves other platforms' optional binaries (@swc/core-*, resolver
# bindings) out of a lockfile written on Linux, and npm ci then refuses that lockfile as out of sync.
# npm install still installs exactly the versions the lockfile pins.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] installing npm packages from package-lock.json"
  # A registry hiccup should not fail a CI run: three tries, and the end of npm's own log when the
  # last one fails (at --loglevel=error npm prints little more than where that log is).
  for attempt in 1 2 3; do
    if npm install --no-audit --no-fund --loglevel=error; then break; fi
    if [ "$attempt" = 3 ]; then
      echo "[setup] npm install failed three times" >&2
      log="$(ls -t "$(npm config get cache)"/_logs/*-debug-0.log 2>/dev/null | head -1 || true)"
      if [ -n "$log" ]; then echo "[setup] the end of $log:" >&2; tail -40 "$log" >&2; fi
      exit 1
    fi
    echo "[setup] npm install failed (try $attempt of 3); trying again in $((attempt * 10)) s" >&2
    sleep $((attempt * 10))
  done
fi

# The project's patches to its dependencies (patches/README.md), checked on every setup: patch-package
# applies a patch the installed files lack and leaves one already applied alone.
npx patch-package --error-on-fail >/dev/null || { echo "[setup] a patch in patches/ no longer applies (patches/README.md)" >&2; exit 1; }

if ! "$TEMPORAL_BIN" --version 2>/dev/null | grep -q "temporal version $TEMPORAL_CLI_VERSION "; then
  GO="$(command -v go || echo /usr/local/go/bin/go)"
  [ -x "$GO" ] || { echo "[setup] Go is required to build the Temporal CLI (looked for go on PATH and /usr/local/go/bin/go)" >&2; exit 1; }
  echo "[setup] building Temporal CLI v$TEMPORAL_CLI_VERSION with $("$GO" version) (one time, a few minutes)"
  mkdir -p "$(dirname "$TEMPORAL_BIN")"
  GOBIN="$(dirname "$TEMPORAL_BIN")" "$GO" install \
    -ldflags "-X github.com/temporalio/cli/temporalcli.Version=$TEMPORAL_CLI_VERSION" \
    "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_CLI_VERSION"
  "$TEMPORAL_BIN" --version | grep -q "temporal version $TEMPORAL_CLI_VERSION " \
    || { echo "[setup] built Temporal CLI reports an unexpected version: $("$TEMPORAL_BIN" --version)" >&2; exit 1; }
fi

# The version is read into a variable first: `grep -q` on the pipe would exit at the first match
# and, under pipefail, versitygw's SIGPIPE on its next line would read as a mismatch.
versitygw_version() { "$VERSITYGW_BIN" --version 2>/dev/null | head -1 || true; }
if [ "$(versitygw_version)" != "Version  : $VERSITYGW_VERSION" ]; then
  GO="$(command -v go || echo /usr/local/go/bin/go)"
  [ -x "$GO" ] || { echo "[setup] Go is required to build versitygw (looked for go on PATH and /usr/local/go/bin/go)" >&2; exit 1; }
  echo "[setup] building versitygw $VERSITYGW_VERSION with $("$GO" version) (one time, a minute or two)"
  mkdir -p "$(dirname "$VERSITYGW_BIN")"
  GOBIN="$(dirname "$VERSITYGW_BIN")" "$GO" install -ldflags "-X main.Version=$VERSITYGW_VERSION" \
    "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  [ "$(versitygw_version)" = "Version  : $VERSITYGW_VERSION" ] \
    || { echo "[setup] built versitygw reports an unexpected version: $(versitygw_version)" >&2; exit 1; }
fi

# The curves picture (src/report) draws its text with DejaVu Sans; Debian's base images ship it,
# a slimmer machine gets it from Debian's packages.
if [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "[setup] installing fonts-dejavu-core for the curves picture"
  apt-get update -qq && apt-get install -y -qq fonts-dejavu-core >/dev/null
fi

# The rollout viewer's browser tests drive Debian's chromium with playwright-core (scripts/lib/chromium.ts).
if ! command -v chromium >/dev/null && [ -z "${DURABLE_RL_CHROMIUM:-}" ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "[setup] installing Debian's chromium for the viewer's browser tests (one time)"
    apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "[setup] no chromium: the viewer's browser tests need Debian's chromium (apt-get install chromium) or DURABLE_RL_CHROMIUM=<path>" >&2
  fi
fi

bash scripts/setup-python.sh

echo "[setup] building TypeScript and the workflow bundle"
npm run --silent build
