#!/usr/bin/env bash
# The main job, end to end on a fresh Debian 12 machine: set up, build the local GPU-node image,
# start it as a systemd container (the embedded default target), make it look like a GPU box
# that runs SGLang without speculative decoding and a training job, then run the rollout:
#   ansible-playbook -i inventories/local playbooks/deploy_dflash.yml
# Extra arguments go to that ansible-playbook (e.g. --check --diff). Run it again: changed=0.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export CONTAINERS_CONF="$PWD/tests/containers/containers.conf"
tests/containers/build-node-image.sh
name=gpufleet-local
image=${GPUFLEET_NODE_IMAGE:-localhost/gpufleet-sglang-node:bookworm}
if ! podman container exists "$name"; then
  podman run -d --name "$name" --hostname "$name" --systemd=always "$image" /sbin/init >/dev/null
fi
podman start "$name" >/dev/null
for _ in $(seq 1 30); do
  state=$(podman exec "$name" systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 1
done
export ANSIBLE_COLLECTIONS_PATH
ANSIBLE_COLLECTIONS_PATH=$(scripts/install-collection.sh "$PWD/.cache/collections")
ansible-playbook -i inventories/local tests/containers/provision.yml
ansible-playbook -i inventories/local playbooks/deploy_dflash.yml "$@"
