#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, linters, ansible-test sanity, pytest
# (unit + real ansible-playbook integration), Molecule scenarios in containers.
# Run one stage with e.g. `scripts/test.sh pytest` (stages: lint sanity pytest molecule).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
stages=("$@")
((${#stages[@]})) || stages=(lint sanity pytest molecule)

stage() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)"; SECONDS=0; }
done_stage() { printf '=== %s took %ss\n' "$1" "$SECONDS"; }

for s in "${stages[@]}"; do
  case "$s" in
    lint)
      stage lint
      ruff check .
      ansible-lint --profile production
      done_stage lint ;;
    sanity)
      stage sanity
      scripts/sanity.sh
      done_stage sanity ;;
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
    *) echo "unknown stage $s (lint sanity pytest molecule)" >&2; exit 2 ;;
  esac
done
