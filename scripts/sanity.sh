#!/usr/bin/env bash
# ansible-test needs the collection at .../ansible_collections/NAMESPACE/NAME: sanity-test a
# copy of the tracked (and new, unignored) files laid out that way.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dest="$root/ansible_collections/gpufleet/sglang"
mkdir -p "$dest"
# --ignore-missing-args: a tracked file deleted in the working tree (not committed yet) is left out.
git ls-files -z --cached --others --exclude-standard | rsync -a --ignore-missing-args --from0 --files-from=- ./ "$dest/"
cd "$dest"
# ansible-test reads the file list from git when there is a repository.
git init -q . && git add -A
ansible-test sanity --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" --requirements --color no "$@"
