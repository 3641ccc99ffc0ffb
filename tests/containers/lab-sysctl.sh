#!/usr/bin/env bash
# The kernel limits the lab's nodes need on this machine, kept in /etc/sysctl.d/ and applied now. Each node is
# a systemd container whose systemd (and its services) take inotify instances of root's: a new Debian 12 has
# 128, which about 31 nodes use up; a node started past that hangs in "initializing". Only raises a limit.
#   tests/containers/lab-sysctl.sh
set -euo pipefail
conf=/etc/sysctl.d/60-gpufleet-lab.conf
# name minimum (enough for the fleet bench's 100 nodes and the scenarios beside them)
wants=("fs.inotify.max_user_instances 8192" "fs.inotify.max_user_watches 524288")
lines=()
low=false
for want in "${wants[@]}"; do
  read -r name minimum <<<"$want"
  have=$(sysctl -n "$name")
  ((have >= minimum)) || low=true
  lines+=("$name = $((have > minimum ? have : minimum))")
done
if [ "$low" = true ]; then
  { echo "# The gpufleet.sglang lab (tests/containers/lab-sysctl.sh): systemd containers, one per lab node."
    printf '%s\n' "${lines[@]}"; } > "$conf"
  echo "lab: raising kernel limits for the lab's systemd containers in $conf (${lines[*]}); sysctl --system"
  sysctl --system >/dev/null
fi
