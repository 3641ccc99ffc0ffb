#!/usr/bin/env bash
# Run the Molecule scenarios (default: all) against the local systemd image; print each one's time.
#   tests/molecule.sh [default|brownfield|fleet|traffic|multi|canary ...]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
export CONTAINERS_CONF="$PWD/tests/containers/containers.conf"
# scripts/test.sh runs two of these at once: one builds the images and the lab key, the other waits.
mkdir -p .cache
# The fleet scenario reaches its nodes over SSH with the lab's key (mounted into each container).
GPUFLEET_LAB_SSH_DIR=$(flock .cache/lab-prepare.lock sh -c \
  'tests/containers/build-node-image.sh >&2 && tests/containers/lab-ssh-key.sh')
export GPUFLEET_LAB_SSH_DIR
# The collection as a user installs it, in a directory of this run's own.
mkdir -p tests/output
ANSIBLE_COLLECTIONS_PATH=$(mktemp -d "$PWD/tests/output/molecule-collections.XXXXXX")
trap 'rm -rf "$ANSIBLE_COLLECTIONS_PATH"' EXIT
export ANSIBLE_COLLECTIONS_PATH
scripts/install-collection.sh "$ANSIBLE_COLLECTIONS_PATH" >/dev/null
export ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 PY_COLORS=0
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(default brownfield fleet traffic multi canary)
cd extensions
times=()
for s in "${scenarios[@]}"; do
  SECONDS=0
  # shellcheck disable=SC2046 # one word per port
  ../tests/containers/lab-ports.sh $(grep -oE '127\.0\.0\.1:[0-9]+:' "molecule/$s/molecule.yml" | cut -d: -f2)
  molecule test -s "$s"
  times+=("$s=${SECONDS}s")
done
echo "molecule scenario times: ${times[*]}"
