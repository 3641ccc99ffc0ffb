#!/usr/bin/env bash
# The lab's Prometheus: Debian's `prometheus` package (scripts/setup.sh), on 127.0.0.1 only, scraping the lab's
# SGLang servers (their /metrics, SGLang's --enable-metrics) and the lab gateway's metrics, every 5 s.
#   tests/traffic/lab-prometheus.sh start DIR PORT GATEWAY_METRICS_HOSTPORT WORKER_HOSTPORT...   (config, data,
#                                                                                                log, pid in DIR)
#   tests/traffic/lab-prometheus.sh stop DIR
# Each worker's `instance` label is its HOST:PORT as given (what sglang_dflash_prometheus_instance defaults to:
# the metrics URL's host and port). It ends by itself after an hour at most, as the lab gateway does.
set -euo pipefail
cd "$(dirname "$0")/../.."
action=$1
dir=$2
case "$action" in
  start)
    port=$3 gateway=$4
    shift 4
    mkdir -p "$dir/data"
    "$0" stop "$dir"
    workers=$(printf "'%s', " "$@")
    cat >"$dir/prometheus.yml" <<CONFIG
global:
  scrape_interval: 5s
  scrape_timeout: 4s
scrape_configs:
  - job_name: sglang
    static_configs:
      - targets: [${workers%, }]
  - job_name: gateway
    static_configs:
      - targets: ['$gateway']
CONFIG
    NO_PROXY=127.0.0.1,localhost setsid timeout 3600 prometheus --config.file="$dir/prometheus.yml" \
      --web.listen-address="127.0.0.1:$port" --storage.tsdb.path="$dir/data" \
      --storage.tsdb.retention.time=2h >"$dir/prometheus.log" 2>&1 &
    echo $! >"$dir/prometheus.pid"
    for _ in $(seq 1 100); do
      if curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready"; then exit 0; fi
      sleep 0.2
    done
    echo "lab-prometheus: Prometheus on 127.0.0.1:$port is not ready after 20 s (log: $dir/prometheus.log)" >&2
    tail -20 "$dir/prometheus.log" >&2
    exit 1 ;;
  stop)
    if [ -f "$dir/prometheus.pid" ]; then
      pid=$(cat "$dir/prometheus.pid")
      # setsid made it a process group of its own: timeout and Prometheus end together.
      kill -- "-$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 -- "-$pid" 2>/dev/null || true
      rm -f "$dir/prometheus.pid"
    fi ;;
  *) echo "usage: $0 start DIR PORT GATEWAY_METRICS_HOSTPORT WORKER_HOSTPORT... | stop DIR" >&2; exit 2 ;;
esac
