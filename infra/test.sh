#!/usr/bin/env bash
# The test command (README, .ci/run): install what is missing, lint (layer rules), start a test
# stack on its own ports and data folder, run the TypeScript tests (node:test) and the engine's
# tests (pytest), stop the stack, and print one summary line: "N passed, N failed".
# Arguments narrow the run: `npm test -- learner trajectory` runs only the TypeScript test files whose
# path contains one of the words, and the engine's tests only when one of the words is "engine".
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
started=$(date +%s)
bash infra/install.sh || exit 1

# A stack of its own, so tests never touch the user's .longhaul data or ports.
export LONGHAUL_HOME="${LONGHAUL_TEST_HOME:-$root/.longhaul-test}"
# LONGHAUL_TEST_*_PORT move the test stack (e.g. to run two test stacks side by side).
export LONGHAUL_TEMPORAL_PORT="${LONGHAUL_TEST_TEMPORAL_PORT:-17233}" LONGHAUL_TEMPORAL_UI_PORT="${LONGHAUL_TEST_TEMPORAL_UI_PORT:-18233}"
export LONGHAUL_PG_PORT="${LONGHAUL_TEST_PG_PORT:-55433}" LONGHAUL_S3_PORT="${LONGHAUL_TEST_S3_PORT:-16333}"
export LONGHAUL_TOOLS_DIR="${LONGHAUL_TOOLS_DIR:-$root/.longhaul/tools}"
# Worker metrics endpoints off: tests spawn many workers side by side (test/worker-metrics.test.ts picks its own ports).
export LONGHAUL_METRICS_PORT="${LONGHAUL_TEST_METRICS_PORT:-0}"
unset DATABASE_URL S3_ENDPOINT
# Every TEMPORAL_* (address, config file, profile, API key, TLS) would point the tests at another server.
for variable in $(compgen -e | grep '^TEMPORAL_'); do unset "$variable"; done
if [ "${LONGHAUL_TEST_KEEP_DATA:-0}" != 1 ]; then
  node dist/cli/main.js down >/dev/null 2>&1 || true
  rm -rf "$LONGHAUL_HOME"
fi

echo "== lint (eslint layer rules + tsc)"
lint_failed=0
npx eslint . || lint_failed=1
# One formatter for the whole tree at one line width: Prettier (TypeScript, JSON), ruff (the engine's Python). `npm run format` fixes.
npx prettier --check --log-level warn . || { echo "formatting differs: run npm run format"; lint_failed=1; }
"$LONGHAUL_TOOLS_DIR/venv/bin/ruff" format --check --quiet gpu/engine || { echo "formatting differs in gpu/engine: run npm run format"; lint_failed=1; }

echo "== stack up ($LONGHAUL_HOME)"
stack_started=$(date +%s)
# Installed before up: whatever way this script ends (a failed start, a failed test, Ctrl-C), the stack stops.
trap 'node dist/cli/main.js down >/dev/null 2>&1 || true' EXIT
if ! node dist/cli/main.js up --no-workers; then
  echo "stack failed to start; logs:"; tail -n 30 "$LONGHAUL_HOME"/logs/*.log
  echo "0 passed, 1 failed"; exit 1
fi
echo "stack up in $(( $(date +%s) - stack_started )) s"

echo "== TypeScript tests (node:test)"
tap="$LONGHAUL_HOME/node-tests.tap"
mapfile -t files < <(find dist -name '*.test.js' -not -path '*/node_modules/*' | sort)
run_engine=1
if [ $# -gt 0 ]; then
  run_engine=0; selected=()
  for word in "$@"; do [ "$word" = engine ] && run_engine=1; done
  for file in "${files[@]}"; do for word in "$@"; do [[ "$file" == *"$word"* ]] && { selected+=("$file"); break; }; done; done
  files=("${selected[@]}")
  echo "selected ${#files[@]} test file(s)$([ $run_engine = 1 ] && echo ' and the engine tests')"
fi
# The report's browser tests need headless Chromium: installed here (not by install.sh: running
# Longhaul does not need it), only when such a test is selected. If it cannot be installed, those tests fail saying so.
for file in "${files[@]}"; do [[ "$file" == *browser* ]] && { bash infra/install-chromium.sh || true; break; }; done
node_status=0; node_pass=0; node_fail=0
if [ ${#files[@]} -gt 0 ]; then
  node --test --test-concurrency="${LONGHAUL_TEST_CONCURRENCY:-2}" --test-timeout=600000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
  node_status=$?
  node_pass=$(grep -E '^# pass ' "$tap" | awk '{print $3}'); node_fail=$(grep -E '^# fail ' "$tap" | awk '{print $3}')
fi

py_status=0; py_pass=0; py_fail=0
if [ "$run_engine" = 1 ]; then
  echo "== engine tests (pytest)"
  py_out="$LONGHAUL_HOME/pytest.out"
  (cd gpu/engine && "$LONGHAUL_TOOLS_DIR/venv/bin/python" -m pytest -p no:cacheprovider) | tee "$py_out"
  py_status=${PIPESTATUS[0]}
  py_pass=$(grep -oE '[0-9]+ passed' "$py_out" | tail -1 | awk '{print $1}'); py_fail=$(grep -oE '[0-9]+ (failed|error)' "$py_out" | awk '{s+=$1} END {print s+0}')
  # pytest exits 5 when it collected nothing: the engine's tests went missing, which is a failure.
  [ "$py_status" -eq 5 ] && echo "pytest collected no tests: the engine's tests are missing"
fi

passed=$(( ${node_pass:-0} + ${py_pass:-0} ))
failed=$(( ${node_fail:-0} + ${py_fail:-0} + lint_failed ))
[ "$node_status" -ne 0 ] && [ "${node_fail:-0}" -eq 0 ] && failed=$((failed + 1))
[ "$py_status" -ne 0 ] && [ "${py_fail:-0}" -eq 0 ] && failed=$((failed + 1))
echo "== done in $(( $(date +%s) - started )) s (lint: $([ $lint_failed = 0 ] && echo ok || echo FAILED))"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
