#!/usr/bin/env bash
# The lab's SGLang gateway: SMG from PyPI (requirements/dev.in) on 127.0.0.1, in front of lab workers.
#   tests/traffic/lab-gateway.sh start DIR PORT ADMIN_KEY WORKER_URL...   (log and pid in DIR)
#   tests/traffic/lab-gateway.sh stop DIR
# It binds 127.0.0.1 only (its metrics too: SMG's default is 0.0.0.0:29000, which a second instance
# cannot share), loads no tokenizer (nothing is fetched), and ends by itself after an hour at most.
# Health checks and retries are SMG's defaults (every 60 s, 3 failures; 5 retries): what a fleet runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/lab-daemon.sh
. tests/lab-daemon.sh
action=$1
dir=$2
case "$action" in
  start)
    port=$3 key=$4
    shift 4
    mkdir -p "$dir"
    "$0" stop "$dir"
    daemon_start "$dir/smg.pid" "$dir/smg.log" env HF_HUB_OFFLINE=1 "$PWD/.venv/bin/smg" launch \
      --host 127.0.0.1 --port "$port" --worker-urls "$@" --policy round_robin \
      --prometheus-host 127.0.0.1 --prometheus-port "$((port + 10))" \
      --control-plane-api-keys "lab-admin:Lab admin:admin:$key" \
      --disable-tokenizer-autoload --log-level info
    daemon_ready "lab-gateway: SMG on 127.0.0.1:$port" "$dir/smg.log" 20 \
      curl -sf -o /dev/null "http://127.0.0.1:$port/readiness" ;;
  stop)
    daemon_stop "$dir/smg.pid" ;;
  *) echo "usage: $0 start DIR PORT ADMIN_KEY WORKER_URL... | stop DIR" >&2; exit 2 ;;
esac
