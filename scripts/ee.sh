#!/usr/bin/env bash
# The execution environment (EE), for real: build it with ansible-builder on a base image made here
# (no registry is reachable), start a lab node, and run the fleet picture in the EE with ansible-navigator
# over SSH:
#   scripts/ee.sh [--rebuild]
# 1. ee/build-base-image.sh: localhost/gpufleet-ee-base:bookworm, debootstrapped (when missing or its recipe changed);
# 2. the collection's tarball, then `ansible-builder build` of ee/execution-environment.yml:
#    localhost/gpufleet-sglang-ee:bookworm (when missing, when what it is built from changed: the base image,
#    the definition, ansible-builder or the collection's files; or with --rebuild);
# 3. the lab node gpufleet-ee (SSH on 127.0.0.1:22191, user ops with sudo, provisioned as the README's
#    embedded target) and an inventory for it in .cache/ee/inventory;
# 4. ansible-navigator run playbooks/gather_facts.yml --mode stdout in the EE, then the fleet report's row
#    of the node is checked.
set -euo pipefail
cd "$(dirname "$0")/.."

rebuild=false
for arg in "$@"; do
  case "$arg" in
    --rebuild) rebuild=true ;;
    -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {print substr($0, 3)}' "$0"; exit 0 ;;
    *) echo "ee: unknown argument $arg (usage: scripts/ee.sh [--rebuild])" >&2; exit 2 ;;
  esac
done

image=localhost/gpufleet-sglang-ee:bookworm
node=gpufleet-ee
port=22191
work=.cache/ee
tools=.cache/ee-tools/bin

# As scripts/test.sh: within a test lane the set-up ran before the lanes started (and the other lane may be using it).
[ -n "${GPUFLEET_TEST_LANE:-}" ] || scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export CONTAINERS_CONF="$PWD/tests/containers/containers.conf"
for tool in "$tools/ansible-builder" "$tools/ansible-navigator"; do
  [ -x "$tool" ] || { echo "ee: $tool is missing: scripts/setup.sh installs requirements/ee-tools.txt there" >&2; exit 1; }
done
mkdir -p "$work"

# 1. The base image.
step=$SECONDS
ee/build-base-image.sh
times="base image $((SECONDS - step))s"

# 2. The EE: the collection as a tarball (what ansible-galaxy installs in the EE), then ansible-builder.
step=$SECONDS
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
ansible-galaxy collection build --force --output-path "$build" . >/dev/null
tarball=$(ls "$build"/gpufleet-sglang-*.tar.gz)
cp "$tarball" "$work/gpufleet-sglang.tar.gz"
# What the EE is made of: the base image, the definition, the builder, and the collection's files (the
# tarball's FILES.json has each file's checksum; the tarball's own bytes change with every build).
recipe=$( {
  podman image inspect localhost/gpufleet-ee-base:bookworm --format '{{.Id}}'
  cat ee/execution-environment.yml ee/requirements.yml requirements/ee.txt
  "$tools/ansible-builder" --version
  tar -xOzf "$tarball" MANIFEST.json FILES.json
} | sha256sum | cut -c1-16)
have=$(podman image inspect "$image" --format '{{index .Labels "gpufleet.recipe"}}' 2>/dev/null || true)
why=
if [ "$rebuild" = true ]; then why="--rebuild"
elif [ -z "$have" ]; then why="$image does not exist"
elif [ "$have" != "$recipe" ]; then why="what it is built from changed ($have -> $recipe)"
fi
if [ -n "$why" ]; then
  echo "ee: building $image ($why); log in $work/build.log"
  old_id=$(podman image inspect "$image" --format '{{.Id}}' 2>/dev/null || true)
  # --layers=false: no cached layer, and no untagged image of the intermediate stages is left behind.
  # The build's pip reaches PyPI through this machine's egress, whose CA only the host's bundle holds: the
  # bundle is mounted for the build's RUN steps, not copied into the image.
  if ! "$tools/ansible-builder" build -f ee/execution-environment.yml -t "$image" --context "$work/context" \
       --container-runtime podman -v 2 \
       "--extra-build-cli-args=--layers=false --label gpufleet.recipe=$recipe -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro" \
       >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log" >&2
    echo "ee: ansible-builder failed to build $image; the whole log is $work/build.log" >&2
    exit 1
  fi
  echo "ee: built $image in $((SECONDS - step))s"
  # The image it replaces, untagged now (kept if a container still uses it).
  if [ -n "$old_id" ] && [ "$old_id" != "$(podman image inspect "$image" --format '{{.Id}}')" ]; then
    podman rmi "$old_id" >/dev/null 2>&1 || true
  fi
else
  echo "ee: image $image is up to date ($recipe)"
fi
times+=", EE $((SECONDS - step))s"

# 3. The lab node and its inventory: the README's embedded target's settings (inventories/local/group_vars),
# another container and port, so that the EE's run leaves that target alone.
step=$SECONDS
mkdir -p .cache
flock .cache/lab-prepare.lock tests/containers/build-node-image.sh
tests/containers/lab-node.sh "$node" "$port"
keys=$(tests/containers/lab-ssh-key.sh)
inventory=$work/inventory
rm -rf "$inventory"
mkdir -p "$inventory"
cp -r inventories/local/group_vars "$inventory/"
cat > "$inventory/hosts.yml" <<EOF
---
# Made by scripts/ee.sh: the lab node the EE reaches over SSH (the repository is mounted in the EE at the
# same path, so the key's path holds there too).
all:
  children:
    gpu_inference:
      hosts:
        $node:
          ansible_host: 127.0.0.1
          ansible_port: $port
          ansible_ssh_private_key_file: $keys/id_ed25519
EOF
ansible-playbook -i "$inventory" tests/containers/provision.yml >"$work/provision.log" 2>&1 || {
  tail -n 30 "$work/provision.log" >&2
  echo "ee: provisioning the lab node $node failed; the whole log is $work/provision.log" >&2
  exit 1
}
times+=", lab node $((SECONDS - step))s"

# 4. The fleet picture, run in the EE. ansible-runner starts podman with --ipc=host, and ansible-navigator
# refuses podman without /dev/mqueue, which systemd makes on a usual host; PID 1 here is not systemd.
if [ ! -d /dev/mqueue ]; then
  echo "ee: making /dev/mqueue (ansible-navigator needs it for podman; this host's PID 1 is not systemd)"
  mkdir /dev/mqueue
fi
step=$SECONDS
report=fleet-report/fleet-report.json
rm -f "$report"
export ANSIBLE_NAVIGATOR_CONFIG="$PWD/ee/ansible-navigator.yml"
echo "ee: ANSIBLE_NAVIGATOR_CONFIG=ee/ansible-navigator.yml $tools/ansible-navigator run playbooks/gather_facts.yml --mode stdout -i $inventory"
# Without a terminal, ansible-navigator's stdout keeps the runner's event markers (base64 between erase
# sequences, invisible on a terminal: ansible-navigator#1828); they are taken out of what is printed here.
if ! "$tools/ansible-navigator" run playbooks/gather_facts.yml --mode stdout -i "$inventory" |
     sed -u -E $'s#\x1b\\[K[A-Za-z0-9+/=]*\x1b\\[[0-9]+D\x1b\\[K##g'; then
  echo "ee: the run in the EE failed (above; ansible-navigator's log: $work/ansible-navigator.log)" >&2
  exit 1
fi
[ -s "$report" ] || { echo "ee: the run in the EE wrote no $report" >&2; exit 1; }
python3 - "$report" "$node" <<'EOF'
import json
import sys

path, node = sys.argv[1:]
rows = {row["host"]: row for row in json.load(open(path))["hosts"]}
if node not in rows:
    sys.exit("ee: %s has no row for %s (rows: %s)" % (path, node, ", ".join(rows) or "none"))
row = rows[node]
version = (row.get("facts") or {}).get("package", {}).get("version")
print("ee: %s: %s is %s, sglang %s, switch %s" % (path, node, row["status"], version,
                                                  (row.get("switch") or {}).get("state")))
EOF
echo "ee: done in ${SECONDS}s (${times}, the run in the EE $((SECONDS - step))s)"
