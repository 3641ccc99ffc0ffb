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
    setsid timeout 3600 /usr/sbin/haproxy -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
    echo $! >"$dir/haproxy.pid"
    # Ready once the Runtime API answers (the servers are UP once their health check passed: converge.yml waits).
    for _ in $(seq 1 100); do
      if [ -S "$dir/admin.sock" ]; then exit 0; fi
      sleep 0.2
    done
    echo "lab-haproxy: HAProxy on 127.0.0.1:$port has no stats socket after 20 s (log: $dir/haproxy.log)" >&2
    tail -20 "$dir/haproxy.log" >&2
    exit 1 ;;
  stop)
    if [ -f "$dir/haproxy.pid" ]; then
      pid=$(cat "$dir/haproxy.pid")
      # setsid made it a process group of its own: timeout and HAProxy end together.
      kill -- "-$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 -- "-$pid" 2>/dev/null || true
      rm -f "$dir/haproxy.pid" "$dir/admin.sock"
    fi ;;
  *) echo "usage: $0 start DIR PORT NAME=WORKER_URL... | stop DIR" >&2; exit 2 ;;
esac
