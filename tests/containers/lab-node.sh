#!/usr/bin/env bash
# Start (or make) a lab node: a systemd container of the node image, SSH published on 127.0.0.1:PORT,
# the lab's public key as the authorized key of `ops`. Prints nothing on success.
#   tests/containers/lab-node.sh NAME PORT
# The container is made again when what it was made from is not what this checkout has: another image,
# another port, or another key (a second clone of the repository, or a removed .cache, has a key of its
# own, and a container trusting the old one refuses it). Its labels say which checkout made it.
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1
port=$2
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tests/containers/containers.conf}
image=${GPUFLEET_NODE_IMAGE:-localhost/gpufleet-sglang-node:bookworm}
keys=$(tests/containers/lab-ssh-key.sh)
fingerprint=$(ssh-keygen -l -f "$keys/id_ed25519.pub" | awk '{print $2}')
want="$(podman image inspect "$image" --format '{{.Id}}'):ssh-$port:key-$fingerprint"
login=(ssh -q -i "$keys/id_ed25519" -p "$port" -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=10
       -o UserKnownHostsFile=/dev/null ops@127.0.0.1)

# Nothing to do for a node that runs as made from this image, port and key, lets ops in and has settled: one look
# at the container and one login (which asks systemd). Anything else takes the way below.
if [ "$(podman container inspect "$name" --format '{{.State.Running}} {{index .Config.Labels "gpufleet.lab"}}' \
        2>/dev/null)" = "true $want" ]; then
  case "$("${login[@]}" systemctl is-system-running 2>/dev/null || true)" in running|degraded) exit 0 ;; esac
fi

tests/containers/lab-ports.sh "$port"

start_container() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman run -d --name "$name" --hostname "$name" --label "gpufleet.lab=$want" \
    --label "gpufleet.lab.checkout=$PWD" --systemd=always \
    -p "127.0.0.1:$port:22" -v "$keys/authorized_keys:/home/ops/.ssh/authorized_keys:ro" \
    "$image" /sbin/init >/dev/null
}

label() { podman container inspect "$name" --format "{{index .Config.Labels \"$1\"}}"; }

if ! podman container exists "$name"; then
  start_container
elif [ "$(label gpufleet.lab)" != "$want" ]; then
  had=$(label gpufleet.lab)
  case "$had" in
    *":key-$fingerprint") why="another image or port" ;;
    *) why="another SSH key than this checkout's ($keys)" ;;
  esac
  made_by=$(label gpufleet.lab.checkout)
  echo "lab: $name was made by ${made_by:-an older script, checkout unknown} with $why; making it again" >&2
  start_container
fi
# ready_within SECONDS: ops logs in over the published port with the lab key within SECONDS (a busy 2-core
# machine running other suites boots a container slowly). Then systemd gets the rest of the time to settle.
ready_within() {
  local deadline=$((SECONDS + $1))
  until "${login[@]}" true 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
  while ((SECONDS < deadline)); do
    case "$(podman exec "$name" systemctl is-system-running 2>/dev/null)" in running|degraded) break ;; esac
    sleep 1
  done
  return 0
}

# Why ops cannot log in, in the order it is checked: the container, its systemd, sshd inside, the port, the key.
# A subshell without -e: a failing probe is what it reports.
explain() (
  set +e
  echo "lab: $name does not accept SSH as ops on 127.0.0.1:$port with $keys/id_ed25519" >&2
  echo "  container: $(podman container inspect "$name" --format '{{.State.Status}}' 2>&1)" \
    "ports: $(podman port "$name" 2>&1 | tr '\n' ' ')" >&2
  echo "  systemd: $(podman exec "$name" systemctl is-system-running 2>&1)" \
    "ssh.service: $(podman exec "$name" systemctl is-active ssh.service 2>&1)" >&2
  echo "  listening inside: $(podman exec "$name" ss -Hltn 2>&1 | awk '{print $4}' | tr '\n' ' ')" >&2
  echo "  failed units: $(podman exec "$name" systemctl --failed --plain --no-legend 2>&1 | tr '\n' ';')" >&2
  echo "  ssh -v, last lines:" >&2
  ssh -v -i "$keys/id_ed25519" -p "$port" -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=10 \
    -o UserKnownHostsFile=/dev/null ops@127.0.0.1 true 2>&1 | tail -n 6 | sed 's/^/    /' >&2
  podman exec "$name" journalctl -u ssh.service --no-pager -n 8 2>&1 | sed 's/^/    /' >&2
)

podman start "$name" >/dev/null
# Seen after a host restart: podman says "running" but cannot exec in the container. Make it again.
if ! podman exec "$name" true >/dev/null 2>&1; then
  echo "lab: $name is not usable (podman cannot exec in it); making it again" >&2
  start_container
fi
ready_within 120 && exit 0
# Once more from scratch: a container left by an earlier run (another podman store, a killed run) may hold
# the port's forwarding or a state this script does not know.
explain
echo "lab: making $name again" >&2
start_container
ready_within 120 && exit 0
explain
exit 1
