#!/usr/bin/env bash
# The digest of what tests/containers/provision.yml makes a lab node from: the playbook, the files it copies onto
# the node, and the inventory it runs with (its group_vars and host_vars choose the release, the GPUs, ...).
#   tests/containers/provision-digest.sh INVENTORY      the digest (16 hex digits)
#   tests/containers/provision-digest.sh --list         the playbook's input files, one a line
# tests/integration/test_lab_skips.py checks that every src: of the playbook is among them.
set -euo pipefail
if [ "$1" != --list ]; then
  inventory=$(realpath "$1")
fi
cd "$(dirname "$0")/../.."
inputs=(tests/containers/provision.yml tests/standin/gpufleet_standin.py plugins/module_utils/argparse_source.py
        tests/fixtures/nvidia-smi)
if [ "$1" = --list ]; then
  find "${inputs[@]}" -type f | sort
  exit 0
fi
{
  find "${inputs[@]}" -type f -print0 | sort -z | xargs -0 sha256sum
  # The inventory's files by their path inside it: the same inventory anywhere gives the same digest.
  if [ -d "$inventory" ]; then
    (cd "$inventory" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
  else
    sha256sum <"$inventory"
  fi
} | sha256sum | cut -c1-16
