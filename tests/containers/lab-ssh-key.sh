#!/usr/bin/env bash
# The lab's SSH key pair (made once, kept in .cache/lab-ssh of the checkout): lab containers get the
# public key as /home/ops/.ssh/authorized_keys; Ansible logs in as ops with the private key.
# Prints the directory.
set -euo pipefail
dir=${GPUFLEET_LAB_SSH_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/.cache/lab-ssh}
mkdir -p "$dir"
chmod 0700 "$dir"
if [ ! -f "$dir/id_ed25519" ]; then
  ssh-keygen -q -t ed25519 -N "" -C gpufleet-lab -f "$dir/id_ed25519"
fi
cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
chmod 0644 "$dir/authorized_keys"
echo "$dir"
