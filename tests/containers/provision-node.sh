#!/usr/bin/env bash
# Provision a lab node (tests/containers/provision.yml over the inventory), unless it was provisioned from the same
# inputs: the digest of the playbook, of the files it copies and of the inventory (provision-digest.sh) is kept on
# the node after a provisioning that succeeded, so a node made again (lab-node.sh) or changed inputs provision again.
#   tests/containers/provision-node.sh NAME INVENTORY     (NAME: the container the inventory's host is)
set -euo pipefail
name=$1
inventory=$(realpath "$2")
cd "$(dirname "$0")/../.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tests/containers/containers.conf}
stamp=/var/lib/gpufleet-lab/provisioned.digest
digest=$(tests/containers/provision-digest.sh "$inventory")
if [ "$(podman exec "$name" cat "$stamp" 2>/dev/null)" = "$digest" ]; then
  echo "lab: $name is provisioned from these inputs ($digest)"
  exit 0
fi
# No stamp while it runs: a provisioning that stops half-way is done again, whatever the inputs then.
podman exec "$name" rm -f "$stamp"
ansible-playbook -i "$inventory" tests/containers/provision.yml
podman exec "$name" sh -c 'mkdir -p "${1%/*}" && echo "$2" >"$1"' sh "$stamp" "$digest"
