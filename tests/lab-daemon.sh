# shellcheck shell=bash
# Sourced by the scripts that start the lab's outside systems on 127.0.0.1 (tests/traffic/lab-gateway.sh,
# lab-haproxy.sh, lab-prometheus.sh, tests/containers/lab-olah.sh):
# each runs in a process group of its own under `timeout 3600`, so it ends by itself after an hour at most,
# and stopping it ends the whole group.

# daemon_start PIDFILE LOG COMMAND...: COMMAND in the background, its output in LOG, its group's pid in PIDFILE.
daemon_start() {
  local pidfile=$1 log=$2
  shift 2
  NO_PROXY=127.0.0.1,localhost setsid timeout 3600 "$@" >"$log" 2>&1 &
  echo $! >"$pidfile"
}

# daemon_ready WHAT LOG SECONDS CHECK...: CHECK succeeds within SECONDS; otherwise says that WHAT is not ready,
# with LOG's last lines, and fails.
daemon_ready() {
  local what=$1 log=$2 seconds=$3 deadline
  shift 3
  deadline=$((SECONDS + seconds))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      echo "$what is not ready after $seconds s (log: $log)" >&2
      tail -20 "$log" >&2
      return 1
    fi
    sleep 0.2
  done
}

# daemon_stop PIDFILE: the group PIDFILE names is ended (TERM, KILL after 10 s) and PIDFILE removed.
daemon_stop() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 -- "-$pid" 2>/dev/null || true
  rm -f "$pidfile"
}
