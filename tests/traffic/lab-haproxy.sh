#!/usr/bin/env bash
# The lab's HAProxy (Debian's haproxy package, scripts/setup.sh) on 127.0.0.1, in front of lab workers.
#   tests/traffic/lab-haproxy.sh start DIR PORT NAME=WORKER_URL...   (config, log, pid and stats socket in DIR)
#   tests/traffic/lab-haproxy.sh stop DIR
# One backend, `sglang`, a `server NAME ADDR:PORT` line per worker with an HTTP health check of /health, and the
# Runtime API on a unix socket at the admin level (DIR/admin.sock, mode 600): what a fleet runs, where the
# socket is /run/haproxy/admin.sock (Debian's default line) on the balancer host (docs/gateways.md). leastconn
# spreads the long streams over the servers; retries and redispatch as a fleet sets them. It binds 127.0.0.1
# only and ends by itself after an hour at most.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/lab-daemon.sh
. tests/lab-daemon.sh
action=$1
dir=$2
case "$action" in
  start)
    port=$3
    shift 3
    mkdir -p "$dir"
    "$0" stop "$dir"
    {
      printf 'global\n  stats socket %s/admin.sock mode 600 level admin\n  maxconn 2000\n' "$dir"
      printf 'defaults\n  mode http\n  log global\n  retries 3\n  option redispatch\n'
      printf '  timeout connect 2s\n  timeout client 300s\n  timeout server 300s\n  timeout check 2s\n'
      printf 'frontend lab\n  bind 127.0.0.1:%s\n  default_backend sglang\n' "$port"
      printf 'backend sglang\n  balance leastconn\n  option httpchk GET /health\n'
      for worker in "$@"; do
        name=${worker%%=*} url=${worker#*=}
        printf '  server %s %s check inter 1s fall 2 rise 2\n' "$name" "${url#http://}"
      done
    } >"$dir/haproxy.cfg"
    /usr/sbin/haproxy -c -q -f "$dir/haproxy.cfg"
    daemon_start "$dir/haproxy.pid" "$dir/haproxy.log" /usr/sbin/haproxy -db -f "$dir/haproxy.cfg"
    # Ready once the Runtime API answers (the servers are UP once their health check passed: converge.yml waits).
    daemon_ready "lab-haproxy: HAProxy on 127.0.0.1:$port (its stats socket)" "$dir/haproxy.log" 20 \
      test -S "$dir/admin.sock" ;;
  stop)
    daemon_stop "$dir/haproxy.pid"
    rm -f "$dir/admin.sock" ;;
  *) echo "usage: $0 start DIR PORT NAME=WORKER_URL... | stop DIR" >&2; exit 2 ;;
esac
