"""A run of the collection cut at a step of a switch: the controller killed as a laptop that sleeps or a cancelled job
kills it (SIGKILL to ansible-playbook's whole process group), at the moment the gateway and the host show the step -
watched, not slept for. Used by the traffic scenario (test_traffic_cut.py) and tests/bench/interrupt_bench.py.

The host is read through its container's file system (`podman mount`, on this machine) and its published port; the
gateway through its admin API.
"""

import json
import os
import signal
import subprocess
import time
import urllib.request

INTENT = "/var/lib/gpufleet-sglang/%s.intent.json"


class Host(object):
    """One lab node, read from outside: its intent file, a file of its unit, its server's health and load."""

    def __init__(self, container, api_url, unit="sglang.service"):
        self.container, self.api_url, self.unit = container, api_url, unit
        self.root = subprocess.run(["podman", "mount", container], capture_output=True, text=True,
                                   check=True).stdout.strip()

    def read(self, path):
        try:
            with open(self.root + path) as handle:
                return handle.read()
        except OSError:
            return None

    def intent(self):
        text = self.read(INTENT % self.unit)
        try:
            return json.loads(text) if text else None
        except ValueError:
            return None  # caught half-written (a rename makes that rare): read again at the next poll

    def phase(self):
        return (self.intent() or {}).get("phase")

    def get(self, path, timeout=2.0):
        try:
            with urllib.request.urlopen(self.api_url + path, timeout=timeout) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, b""
        except OSError:
            return 0, b""

    def healthy(self):
        return self.get("/health")[0] == 200

    def running(self):
        status, body = self.get("/v1/loads")
        if status != 200:
            return 0
        return sum(int(load.get("num_running_reqs") or 0) for load in json.loads(body).get("loads") or [])


def gateway_lists(gateway_url, key, worker_url):
    """Whether the SMG at gateway_url lists worker_url (in any state)."""
    request = urllib.request.Request(gateway_url + "/workers", headers={"Authorization": "Bearer %s" % key})
    with urllib.request.urlopen(request, timeout=5) as answer:
        workers = json.loads(answer.read())["workers"]
    return any(w["url"].rstrip("/") == worker_url.rstrip("/") for w in workers)


def steps(host, gateway_url=None, key=None, dropin_has=None):
    """{step: condition()} - the moments a run is cut at, each seen on the gateway or the host."""
    dropin = "/etc/systemd/system/%s.d/90-gpufleet-sglang.conf" % host.unit

    def out_of_gateway():
        return host.phase() == "leaving_rotation" and not gateway_lists(gateway_url, key, host.api_url)

    return {
        # Being taken out: the intent says so, the gateway may or may not have let it go yet.
        "leaving_rotation": lambda: host.phase() == "leaving_rotation",
        # Out of the gateway, requests still in flight on the server: the drain.
        "drain": lambda: out_of_gateway() and host.running() > 0,
        # Our drop-in written, the server not restarted yet.
        "files_written": lambda: host.phase() == "switching" and dropin_has is not None
        and dropin_has in (host.read(dropin) or ""),
        # Restarted, loading, not proven.
        "restarted": lambda: host.phase() == "restarting" and not host.healthy(),
        "canary": lambda: host.phase() == "canary",
        "rollback": lambda: host.phase() == "rolling_back",
    }


def run_cut(argv, env, condition, timeout=600, poll=0.05):
    """Run argv as a process group of its own and SIGKILL the whole group the moment condition() holds.
    Returns (output so far, whether it was cut, seconds until then)."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    cut = False
    while proc.poll() is None and time.monotonic() - started < timeout:
        try:
            cut = bool(condition())
        except (OSError, ValueError):
            cut = False
        if cut:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(poll)
    seconds = time.monotonic() - started
    if proc.poll() is None and not cut:
        os.killpg(proc.pid, signal.SIGKILL)
    output = proc.communicate()[0]
    return output, cut, seconds
