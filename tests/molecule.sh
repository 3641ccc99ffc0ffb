#!/usr/bin/env bash
# Run the Molecule scenarios (default: all) against the local systemd image; print each one's time.
#   tests/molecule.sh [default|brownfield|fleet ...]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
export CONTAINERS_CONF="$PWD/tests/containers/containers.conf"
tests/containers/build-node-image.sh
# The fleet scenario reaches its nodes over SSH with the lab's key (mounted into each container).
GPUFLEET_LAB_SSH_DIR=$(tests/containers/lab-ssh-key.sh)
export GPUFLEET_LAB_SSH_DIR
export ANSIBLE_COLLECTIONS_PATH
ANSIBLE_COLLECTIONS_PATH=$(scripts/install-collection.sh "$PWD/tests/output/collections")
export ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 PY_COLORS=0
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(default brownfield fleet)
cd extensions
times=()
for s in "${scenarios[@]}"; do
  SECONDS=0
  molecule test -s "$s"
  times+=("$s=${SECONDS}s")
done
echo "molecule scenario times: ${times[*]}"
