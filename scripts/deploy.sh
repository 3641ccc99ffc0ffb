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
# The embedded default target (inventories/local/hosts.yml: gpufleet-local on 127.0.0.1:22100).
tests/containers/lab-node.sh gpufleet-local 22100
export ANSIBLE_COLLECTIONS_PATH
ANSIBLE_COLLECTIONS_PATH=$(scripts/install-collection.sh "$PWD/.cache/collections")
tests/containers/provision-node.sh gpufleet-local inventories/local
ansible-playbook -i inventories/local playbooks/deploy_dflash.yml "$@"
