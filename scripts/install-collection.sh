#!/usr/bin/env bash
# Build the collection tarball and install it into DEST (default .cache/collections), the way a
# user installs it: everything that runs the collection (tests, the local deployment) uses that.
# Prints DEST. Not built again when DEST already holds what the build would make: galaxy's own list of the
# files it would put in the tarball (galaxy.yml's build_ignore applied), with each file's sha256, is the installed
# FILES.json, and galaxy.yml's metadata the installed MANIFEST.json's. Where that cannot be told, it installs.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.cache/collections}
# Install exactly into dest, and tell galaxy it is a configured path (else it warns).
export ANSIBLE_COLLECTIONS_PATH="$dest"
installed=$dest/ansible_collections/gpufleet/sglang
# The interpreter of the ansible-galaxy that builds (its shebang): its ansible-core lists the files.
galaxy_python=()
galaxy=$(command -v ansible-galaxy || true)
[ -z "$galaxy" ] || read -r -a galaxy_python < <(sed -n '1s/^#! *//p' "$galaxy")
current=
[ ! -f "$installed/FILES.json" ] || ((${#galaxy_python[@]} == 0)) ||
  current=$("${galaxy_python[@]}" - "$installed" 2>/dev/null <<'EOF' || true
import json
import sys

from ansible.galaxy.collection import _build_files_manifest, _build_manifest, _get_meta_from_src_dir

meta = _get_meta_from_src_dir(b".")
files = _build_files_manifest(b".", meta["namespace"], meta["name"], meta["build_ignore"], meta["manifest"],
                              meta["license_file"])
with open(sys.argv[1] + "/FILES.json") as f:
    installed_files = json.load(f)
with open(sys.argv[1] + "/MANIFEST.json") as f:
    installed_info = json.load(f)["collection_info"]
info = _build_manifest(**meta)["collection_info"]
if json.loads(json.dumps([files, info])) == [installed_files, installed_info]:
    print("current")
EOF
)
if [ "$current" = current ]; then
  echo "$dest"
  exit 0
fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
ansible-galaxy collection build --force --output-path "$build" . >/dev/null
rm -rf "$installed"
ansible-galaxy collection install --force -p "$dest" "$build"/gpufleet-sglang-*.tar.gz >/dev/null
echo "$dest"
