#!/usr/bin/env bash
# Refuse lab ports that a container of another podman store forwards.
#   tests/containers/lab-ports.sh PORT...
# Rootful podman publishes a port with DNAT rules and binds nothing, so it does not see that a container of
# another store (another CONTAINERS_STORAGE_CONF, a second user of root's podman, or a store deleted while
# its containers ran) already forwards the same 127.0.0.1 port: both rules stay, the older one wins, and
# SSH to the new container fails with "Connection refused" or "No route to host". Seen when a clone's run
# in its own store left gpufleet-ee running and the next run on the machine used the default store.
# Prints nothing and exits 0 when no PORT is taken so; else names each port, the foreign container and
# what to do, and exits 1. Without iptables (or the right to read it) there is nothing to check.
set -euo pipefail
export CONTAINERS_CONF=${CONTAINERS_CONF:-$(cd "$(dirname "$0")" && pwd)/containers.conf}
rules=$(iptables -w -t nat -S 2>/dev/null) || exit 0
ours=$(podman ps -a --no-trunc --format '{{.ID}}')
taken=0
for port in "$@"; do
  # netavark's and CNI's DNAT jumps name the container: "podman id: ID" or id: "ID".
  while read -r id; do
    grep -qx "$id" <<<"$ours" && continue
    echo "lab: 127.0.0.1:$port is forwarded to container ${id:0:12}, which this podman store does not have" \
      "(another store's, or a leftover of one): remove it where it runs, e.g." \
      "CONTAINERS_STORAGE_CONF=THAT_STORE podman rm -f ${id:0:12}; its rules: iptables -t nat -S | grep $id" >&2
    taken=1
  done < <(grep -E -- "--dport $port( |$)" <<<"$rules" | grep -oE '\b[0-9a-f]{64}\b' | sort -u)
done
exit "$taken"
