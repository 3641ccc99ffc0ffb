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
# shellcheck source=tests/lab-daemon.sh
. tests/lab-daemon.sh
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
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: sglang
    static_configs:
      - targets: [${workers%, }]
  - job_name: gateway
    static_configs:
      - targets: ['$gateway']
CONFIG
    daemon_start "$dir/prometheus.pid" "$dir/prometheus.log" prometheus --config.file="$dir/prometheus.yml" \
      --web.listen-address="127.0.0.1:$port" --storage.tsdb.path="$dir/data" --storage.tsdb.retention.time=2h
    daemon_ready "lab-prometheus: Prometheus on 127.0.0.1:$port" "$dir/prometheus.log" 20 \
      curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready" ;;
  stop)
    daemon_stop "$dir/prometheus.pid" ;;
  *) echo "usage: $0 start DIR PORT GATEWAY_METRICS_HOSTPORT WORKER_HOSTPORT... | stop DIR" >&2; exit 2 ;;
esac
