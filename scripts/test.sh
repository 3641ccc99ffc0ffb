#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, linters, ansible-test sanity, the same sanity and the unit
# tests on every other ansible-core minor that requires_ansible claims, pytest (unit + real
# ansible-playbook integration), Molecule scenarios in containers.
# Run one stage with e.g. `scripts/test.sh pytest` (stages: lint sanity versions pytest molecule).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
# A skipped test (a tool missing here) fails the suite instead of passing it (tests/conftest.py).
export GPUFLEET_TESTS_NO_SKIP=1
stages=("$@")
((${#stages[@]})) || stages=(lint sanity versions pytest molecule)

stage() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)"; SECONDS=0; }
done_stage() { printf '=== %s took %ss\n' "$1" "$SECONDS"; }

for s in "${stages[@]}"; do
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
      for core in $(grep -v '^#' tests/sanity/ansible-core-matrix.txt); do
        start=$SECONDS
        venv="$PWD/.cache/ansible-core/${core%.*}"
        printf -- '--- ansible-core %s: sanity, unit tests\n' "$core"
        PATH="$venv/bin:$PATH" scripts/sanity.sh
        rc=0
        PATH="$venv/bin:$PATH" python -m pytest tests/unit -q -p no:cacheprovider || rc=$?
        if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
        [ "$rc" -eq 0 ] || exit "$rc"
        printf -- '--- ansible-core %s took %ss\n' "$core" "$((SECONDS - start))"
      done
      done_stage versions ;;
    pytest)
      stage pytest
      rc=0
      python -m pytest tests/unit tests/integration -q -p no:cacheprovider || rc=$?
      # Exit 5 means no test ran: that is a failure of the suite, not a pass.
      if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
      [ "$rc" -eq 0 ] || exit "$rc"
      done_stage pytest ;;
    molecule)
      if [ -x tests/molecule.sh ]; then stage molecule; tests/molecule.sh; done_stage molecule; fi ;;
    *) echo "unknown stage $s (lint sanity versions pytest molecule)" >&2; exit 2 ;;
  esac
done
