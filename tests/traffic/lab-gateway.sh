#!/usr/bin/env bash
# The lab's SGLang gateway: SMG from PyPI (requirements/dev.in) on 127.0.0.1, in front of lab workers.
#   tests/traffic/lab-gateway.sh start DIR PORT ADMIN_KEY WORKER_URL...   (log and pid in DIR)
#   tests/traffic/lab-gateway.sh stop DIR
# It binds 127.0.0.1 only (its metrics too: SMG's default is 0.0.0.0:29000, which a second instance
# cannot share), loads no tokenizer (nothing is fetched), and ends by itself after an hour at most.
# Health checks and retries are SMG's defaults (every 60 s, 3 failures; 5 retries): what a fleet runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
action=$1
dir=$2
case "$action" in
  start)
    port=$3 key=$4
    shift 4
    mkdir -p "$dir"
    "$0" stop "$dir"
    HF_HUB_OFFLINE=1 NO_PROXY=127.0.0.1,localhost setsid timeout 3600 "$PWD/.venv/bin/smg" launch \
      --host 127.0.0.1 --port "$port" --worker-urls "$@" --policy round_robin \
      --prometheus-host 127.0.0.1 --prometheus-port "$((port + 10))" \
      --control-plane-api-keys "lab-admin:Lab admin:admin:$key" \
      --disable-tokenizer-autoload --log-level info >"$dir/smg.log" 2>&1 &
    echo $! >"$dir/smg.pid"
    for _ in $(seq 1 100); do
      if curl -sf -o /dev/null "http://127.0.0.1:$port/readiness"; then exit 0; fi
      sleep 0.2
    done
    echo "lab-gateway: SMG on 127.0.0.1:$port is not ready after 20 s (log: $dir/smg.log)" >&2
    tail -20 "$dir/smg.log" >&2
    exit 1 ;;
  stop)
    if [ -f "$dir/smg.pid" ]; then
      pid=$(cat "$dir/smg.pid")
      # setsid made it a process group of its own: timeout and SMG end together.
      kill -- "-$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 -- "-$pid" 2>/dev/null || true
      rm -f "$dir/smg.pid"
    fi ;;
  *) echo "usage: $0 start DIR PORT ADMIN_KEY WORKER_URL... | stop DIR" >&2; exit 2 ;;
esac
