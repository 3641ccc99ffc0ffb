#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, linters, ansible-test sanity, the same sanity and the unit
# tests on every other ansible-core minor that requires_ansible claims, pytest (unit + real
# ansible-playbook integration), Molecule scenarios in containers.
# Run some stages in order with e.g. `scripts/test.sh lint pytest` (stages: lint sanity versions unit pytest
# molecule, or molecule:SCENARIO[,SCENARIO...]; `unit` is the unit tests and the venv's quiet-tools test, which
# scripts/update-locks.sh runs, and pytest runs them too). With no stage named, every stage runs, in two lanes at
# once (see run_all).
set -euo pipefail
cd "$(dirname "$0")/.."
# A lane (run_all) runs after the set-up of the run that started it.
[ -n "${GPUFLEET_TEST_LANE:-}" ] || scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
# A skipped test (a tool missing here) fails the suite instead of passing it (tests/conftest.py).
export GPUFLEET_TESTS_NO_SKIP=1

stage() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)"; SECONDS=0; }
done_stage() { printf '=== %s took %ss\n' "$1" "$SECONDS"; }

# pytest ARGS...: exit 5 means no test ran, a failure of the suite rather than a pass.
run_pytest() {
  local rc=0
  python -m pytest -q -p no:cacheprovider "$@" || rc=$?
  if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; return 1; fi
  return "$rc"
}

run_stage() {
  local s=$1
  case "$s" in
    lint)
      stage lint
      ruff check .
      ansible-lint --profile production
      antsibull-changelog lint
      # The targets' Python floor (each module's requirements: 3.8) checked from the code.
      vermin --no-tips --violations --eval-annotations -t=3.8- plugins/
      done_stage lint ;;
    sanity)
      stage sanity
      scripts/sanity.sh
      done_stage sanity ;;
    versions)
      stage versions
      local core venv start
      while read -r core; do
        start=$SECONDS
        venv="$PWD/.cache/ansible-core/${core%.*}"
        printf -- '--- ansible-core %s: sanity, unit tests\n' "$core"
        PATH="$venv/bin:$PATH" scripts/sanity.sh
        # Its own collection install: another pytest session may be running (run_all). The module_utils tests of code
        # that imports nothing of ansible-core ran in pytest's stage on this interpreter: not again (conftest.py there).
        PATH="$venv/bin:$PATH" GPUFLEET_TEST_OUTPUT="$PWD/tests/output/ansible-core-${core%.*}" \
          GPUFLEET_TESTS_CORE_DEPENDENT_ONLY=1 run_pytest tests/unit
        printf -- '--- ansible-core %s took %ss\n' "$core" "$((SECONDS - start))"
      done < <(grep -v '^#' tests/sanity/ansible-core-matrix.txt)
      done_stage versions ;;
    unit)
      stage unit
      run_pytest tests/unit tests/integration/test_quiet_tools.py
      done_stage unit ;;
    pytest)
      stage pytest
      run_pytest --durations=25 tests/unit tests/integration
      done_stage pytest ;;
    molecule | molecule:*)
      local scenarios=()
      [ "$s" = molecule ] || IFS=, read -ra scenarios <<<"${s#molecule:}"
      stage "$s"
      tests/molecule.sh "${scenarios[@]}"
      done_stage "$s" ;;
    *) echo "unknown stage $s (lint sanity versions unit pytest molecule molecule:SCENARIO,...)" >&2; exit 2 ;;
  esac
}

# Every stage keeps about one core busy (ansible-test, pylint, ansible-playbook, one container's server),
# and CI has two: all stages run as two lanes of about equal length at once, each lane this script with
# its stages. The checks lane's output goes to a log, printed when both lanes are done; the caches both
# lanes use are locked (tests/helpers.py, tests/molecule.sh).
run_all() {
  local log=.cache/test-logs/checks-lane.log checks_rc=0 system_rc=0 pid
  # shellcheck disable=SC2054 # molecule:A,B is one stage naming two scenarios
  local checks=(lint sanity versions molecule:canary) system=(pytest molecule:fleet,multi,traffic,default,brownfield)
  mkdir -p "$(dirname "$log")"
  export GPUFLEET_TEST_LANE=1
  "$0" "${checks[@]}" >"$log" 2>&1 &
  pid=$!
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  printf '=== checks lane (%s): output in %s, shown at the end\n' "${checks[*]}" "$log"
  printf '=== system lane (%s)\n' "${system[*]}"
  "$0" "${system[@]}" || system_rc=$?
  wait "$pid" || checks_rc=$?
  trap - EXIT
  printf '\n=== checks lane output (%s)\n' "$log"
  cat "$log"
  printf '\n=== lanes: checks (%s) rc=%s, system (%s) rc=%s\n' "${checks[*]}" "$checks_rc" "${system[*]}" "$system_rc"
  [ "$checks_rc" -eq 0 ] && [ "$system_rc" -eq 0 ]
}

if (($#)); then
  for s in "$@"; do run_stage "$s"; done
else
  run_all
fi
