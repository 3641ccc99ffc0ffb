#!/usr/bin/env bash
# The main job, end to end on a fresh Debian 12 machine: set up, build the local GPU-node image,
# start it as a systemd container (the embedded default target) reached over SSH on 127.0.0.1 as
# a non-root user with sudo, make it look like a GPU box that runs SGLang without speculative
# decoding and a training job, then run the rollout:
#   ansible-playbook -i inventories/local playbooks/deploy_dflash.yml
# Extra arguments go to that ansible-playbook (e.g. --check --diff). Run it again: changed=0.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export CONTAINERS_CONF="$PWD/tests/containers/containers.conf"
tests/containers/build-node-image.sh
keys=$(tests/containers/lab-ssh-key.sh)
name=gpufleet-local
port=22100  # inventories/local/hosts.yml
image=${GPUFLEET_NODE_IMAGE:-localhost/gpufleet-sglang-node:bookworm}
# The container is made again when the image changed or it was made another way.
want="$(podman image inspect "$image" --format '{{.Id}}'):ssh-$port"

start_container() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman run -d --name "$name" --hostname "$name" --label "gpufleet.lab=$want" --systemd=always \
    -p "127.0.0.1:$port:22" -v "$keys/authorized_keys:/home/ops/.ssh/authorized_keys:ro" \
    "$image" /sbin/init >/dev/null
}

if ! podman container exists "$name" ||
   [ "$(podman container inspect "$name" --format '{{index .Config.Labels "gpufleet.lab"}}')" != "$want" ]; then
  start_container
fi
podman start "$name" >/dev/null
# Seen after a host restart: podman says "running" but cannot exec in the container. Make it again.
if ! podman exec "$name" true >/dev/null 2>&1; then
  echo "deploy: $name is not usable (podman cannot exec in it); recreating it"
  start_container
fi
for _ in $(seq 1 30); do
  state=$(podman exec "$name" systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 1
done
for _ in $(seq 1 30); do
  ssh -q -i "$keys/id_ed25519" -p "$port" -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null ops@127.0.0.1 true && break
  sleep 1
done
export ANSIBLE_COLLECTIONS_PATH
ANSIBLE_COLLECTIONS_PATH=$(scripts/install-collection.sh "$PWD/.cache/collections")
ansible-playbook -i inventories/local tests/containers/provision.yml
ansible-playbook -i inventories/local playbooks/deploy_dflash.yml "$@"
