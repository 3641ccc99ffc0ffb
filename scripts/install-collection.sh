#!/usr/bin/env bash
# Build the collection tarball and install it into DEST (default .cache/collections), the way a
# user installs it: everything that runs the collection (tests, the local deployment) uses that.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.cache/collections}
# Install exactly into dest, and tell galaxy it is a configured path (else it warns).
export ANSIBLE_COLLECTIONS_PATH="$dest"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
ansible-galaxy collection build --force --output-path "$build" . >/dev/null
rm -rf "$dest/ansible_collections/gpufleet/sglang"
ansible-galaxy collection install --force -p "$dest" "$build"/gpufleet-sglang-*.tar.gz >/dev/null
echo "$dest"
