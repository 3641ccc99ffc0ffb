#!/usr/bin/env bash
# Re-resolve every Python lock (requirements/*.txt) to the newest versions the inputs (requirements/*.in, and
# tests/sanity/ansible-core-matrix.txt for the per-release venvs) allow, then rebuild the venvs from them
# and run the fast stages, so that an upgrade is a change to review, not a surprise on a new machine:
#   scripts/update-locks.sh [--no-test]
# Run it when an input changes (a new pin, a new tool), or on purpose to take upgrades (monthly, or after a
# security release of a package in the locks); then read `git diff requirements/` and commit the locks
# with the tests green. Resolved with uv (requirements/lock-tools.txt), for CPython 3.11 on Linux; every
# version carries the sha256 of each of its files on PyPI, and scripts/setup.sh installs with
# --require-hashes.
set -euo pipefail
cd "$(dirname "$0")/.."

test=true
for arg in "$@"; do
  case "$arg" in
    --no-test) test=false ;;
    -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {print substr($0, 3)}' "$0"; exit 0 ;;
    *) echo "update-locks: unknown argument $arg (usage: scripts/update-locks.sh [--no-test])" >&2; exit 2 ;;
  esac
done

tools=.cache/lock-tools
want=$(sha256sum requirements/lock-tools.txt | cut -d' ' -f1)
if [ "$(cat "$tools/.lock.sha256" 2>/dev/null)" != "$want" ]; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check --require-hashes -r requirements/lock-tools.txt 2>&1 |
    { grep -v "^WARNING: Location" || true; }
  echo "$want" > "$tools/.lock.sha256"
fi

# compile INPUT OUTPUT [uv options]: the lock of INPUT, every version at the newest INPUT allows.
compile() {
  local input=$1 output=$2
  shift 2
  "$tools/bin/uv" pip compile --quiet --upgrade --generate-hashes --python-version 3.11 \
    --custom-compile-command scripts/update-locks.sh "$@" "$input" -o "$output"
  echo "update-locks: $output ($(grep -c '^[A-Za-z0-9]' "$output") packages)"
}

for input in requirements/*.in; do
  case "$input" in
    # torch's CPU build is not on PyPI: pip's find-links (this kind of machine's /opt/wheels) has it.
    requirements/sglang-help.in) compile "$input" "${input%.in}.txt" --find-links /opt/wheels --no-emit-find-links ;;
    *) compile "$input" "${input%.in}.txt" ;;
  esac
done

# The venvs of the other ansible-core releases requires_ansible claims: that release and the project's pytest.
pytest_pin=$(grep -o '^pytest==[0-9.]*' requirements/dev.in)
grep -v '^#' tests/sanity/ansible-core-matrix.txt | while read -r core; do
  printf 'ansible-core==%s\n%s\n' "$core" "$pytest_pin" | compile - "requirements/ansible-core-${core%.*}.txt"
done
# A minor no longer in the matrix leaves no lock behind.
for lock in requirements/ansible-core-*.txt; do
  minor=${lock#requirements/ansible-core-}
  grep -q "^${minor%.txt}\." tests/sanity/ansible-core-matrix.txt || { echo "update-locks: removing $lock"; rm -f "$lock"; }
done

git --no-pager diff --stat -- requirements/ || true
if [ "$test" = true ]; then
  # The set-up rebuilds every venv whose lock changed; then the fast stages, the quiet-tools test among them.
  scripts/test.sh lint unit
fi
