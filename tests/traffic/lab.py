"""Run a rollout under the lab's load and count what the load saw (used by the traffic scenario and the bench).

under_load(gateway_url, rollout) starts tests/traffic/loadgen.py against the gateway, lets it run, runs
rollout() (an ansible-playbook run), lets it run a little longer, then stops it (the requests in flight
finish; drain_clients more clients keep streams of drain_tokens tokens in flight, see loadgen.py) and returns
(rollout's result, the load's counts, the rollout's seconds).
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOADGEN = Path(__file__).resolve().parent / "loadgen.py"


def under_load(gateway_url, rollout, clients=8, settle_s=3.0, max_duration_s=900, api_key=None, long_tokens=1000,
               drain_clients=0, drain_tokens=2500):
    with tempfile.TemporaryDirectory(prefix="gpufleet-load-") as work:
        return _under_load(Path(work), gateway_url, rollout, clients, settle_s, max_duration_s, api_key, long_tokens,
                           drain_clients, drain_tokens)


def _under_load(work, gateway_url, rollout, clients, settle_s, max_duration_s, api_key, long_tokens, drain_clients,
                drain_tokens):
    stop, out = work / "stop", work / "load.json"
    argv = [sys.executable, str(LOADGEN), "--url", gateway_url, "--clients", str(clients), "--duration",
            str(max_duration_s), "--stop-file", str(stop), "--out", str(out), "--long-tokens", str(long_tokens),
            "--drain-clients", str(drain_clients), "--drain-tokens", str(drain_tokens)]
    if api_key:
        argv += ["--api-key", api_key]
    load = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(settle_s)
        started = time.monotonic()
        result = rollout()
        seconds = time.monotonic() - started
        time.sleep(settle_s)
    finally:
        stop.write_text("")
        output = load.communicate(timeout=300)[0]
    if load.returncode != 0 or not out.exists():
        raise RuntimeError("the load generator failed (rc %s): %s" % (load.returncode, output[-2000:]))
    return result, json.loads(out.read_text()), seconds
