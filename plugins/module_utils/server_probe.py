# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is the restarted SGLang service up, and what does it say it runs?

Polls systemd and the server together, so that a crash-looping server (unit failed, or waiting to
be restarted, or restarted already) is reported within a poll interval instead of after the whole
health timeout; then sends one real generation request (a server can answer /health and still fail
on its first request, for example a drafter whose shapes only break at decode time), then reads
/server_info (or the older /get_server_info).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

STATE_PROPERTIES = ("ActiveState", "SubState", "NRestarts", "MainPID", "Result", "InvocationID",
                    "ExecMainStartTimestampMonotonic", "ExecMainCode", "ExecMainStatus", "Restart")
# systemd's ExecMainCode (the si_code of the main process's SIGCHLD): how it ended.
EXIT_CODES = {"1": "exited", "2": "was killed", "3": "dumped core"}
MAX_BODY_BYTES = 4 * 1024 * 1024
# Where a module reaches the server from the host itself (documented in doc_fragments/server_endpoint.py).
SERVER_ENDPOINT_ARGS = dict(host=dict(type="str", default="127.0.0.1"), port=dict(type="int", default=30000))


def base_url(host, port):
    """http://HOST:PORT of a server endpoint (an IPv6 address in brackets)."""
    return "http://%s:%d" % ("[%s]" % host if ":" in host else host, int(port))


def http_get(url, timeout):
    """(status, body text); status 0 with the reason when nothing answered."""
    try:
        # The server runs on the host itself: no proxy may stand in between.
        response = open_url(url, headers={"Accept": "application/json"}, timeout=timeout, use_proxy=False)
        return response.getcode(), response.read(MAX_BODY_BYTES).decode("utf-8", "replace")
    except HTTPError as exc:
        return exc.code, exc.read(MAX_BODY_BYTES).decode("utf-8", "replace") if exc.fp else ""
    except (URLError, OSError, ValueError) as exc:  # HTTPError is a URLError: it is caught first
        return 0, str(getattr(exc, "reason", exc))


def service_state(unit, run_systemctl):
    rc, out, _err = run_systemctl(["systemctl", "show", "--no-pager", "-p", ",".join(STATE_PROPERTIES), unit])
    state = {}
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            state[key] = value
    state["NRestarts"] = int(state.get("NRestarts") or 0)
    return state


def crash_reason(state):
    """Why the unit is not going to come up by itself, or None while it may still."""
    active, sub = state.get("ActiveState"), state.get("SubState")
    if active == "failed":
        result = state.get("Result") or sub
        if state["NRestarts"] > 0:
            # A server that crashes within seconds hits systemd's start limit (5 starts in 10 s by default) before a
            # slow poll sees it restarting: still a crash loop, and the unit refuses a start until reset-failed.
            return "the server exited, systemd restarted it %d time(s), then the unit failed (%s): a crash loop" % (
                state["NRestarts"], result)
        return "the unit failed (%s)" % result
    if sub == "auto-restart":
        return "the server exited and systemd is about to restart it (crash loop)"
    if state["NRestarts"] > 0:
        return "the server exited and systemd restarted it %d time(s) (crash loop)" % state["NRestarts"]
    if active == "inactive":
        return "the unit is %s (%s): the server exited" % (active, sub)
    if active == "deactivating" and state.get("MainPID") in ("0", "", None) and state.get("ExecMainCode") in EXIT_CODES:
        # The server's main process ended and systemd is ending what it left (KillMode=mixed: the SIGKILL of the
        # rest). That can take long (a process stuck in the GPU driver dies only when the driver lets it), so the
        # exit is reported now, not after the health timeout.
        restart = state.get("Restart") or "no"
        return "the server %s (%s) and systemd is stopping what it left (%s)%s" % (
            EXIT_CODES[state["ExecMainCode"]], _main_status(state), sub,
            "" if restart == "no" else ": it restarts it after (Restart=%s), a crash loop" % restart)
    # "deactivating" otherwise: a stop before the main process ended (someone stopped the unit); the next poll says
    # whether systemd restarts the server, fails the unit, or leaves it inactive.
    return None


def _main_status(state):
    status = state.get("ExecMainStatus") or "?"
    return "status=%s" % status if state.get("ExecMainCode") == "1" else "signal %s" % status


def read_server_info(base_url, timeout):
    """(info dict or None, endpoint used, problem)."""
    for endpoint in ("/server_info", "/get_server_info"):
        status, body = http_get(base_url + endpoint, timeout)
        if status == 404:
            continue
        if status != 200:
            return None, endpoint, "%s answered %s" % (endpoint, status or body)
        try:
            info = json.loads(body)
        except ValueError:
            return None, endpoint, "%s did not answer JSON" % endpoint
        if not isinstance(info, dict):
            return None, endpoint, "%s did not answer a JSON object" % endpoint
        return info, endpoint, None
    return None, None, "neither /server_info nor /get_server_info exists"


def wait_ready(unit, base_url, timeout, run_systemctl, poll=1.0, clock=time.monotonic, sleep=time.sleep,
               generate=None):
    """Wait for /health 200 while watching the unit; then one generation (generate(), when given); then
    read the server info.

    Returns {ready, crashed, reason, elapsed_s, health_status, generation, server_info, server_info_endpoint,
    state}; generation is generate()'s answer ({ok, latency_s, completion_tokens, problem}) or None.
    """
    started = clock()
    status, body = 0, ""
    state = {}
    while True:
        state = service_state(unit, run_systemctl)
        reason = crash_reason(state)
        elapsed = round(clock() - started, 2)
        if reason:
            return {"ready": False, "crashed": True, "reason": reason, "elapsed_s": elapsed,
                    "health_status": status, "server_info": None, "server_info_endpoint": None, "state": state}
        status, body = http_get(base_url + "/health", min(5.0, max(1.0, timeout)))
        if status == 200:
            generation = generate() if generate else None
            if generation is not None and not generation["ok"]:
                return {"ready": False, "crashed": False, "elapsed_s": round(clock() - started, 2),
                        "reason": "/health answered 200 but the first generation failed: %s" % generation["problem"],
                        "health_status": status, "generation": _generation_summary(generation), "server_info": None,
                        "server_info_endpoint": None, "state": service_state(unit, run_systemctl)}
            info, endpoint, problem = read_server_info(base_url, 10.0)
            return {"ready": problem is None, "crashed": False, "reason": problem,
                    "generation": _generation_summary(generation),
                    "elapsed_s": round(clock() - started, 2), "health_status": status, "server_info": info,
                    "server_info_endpoint": endpoint, "state": state,
                    "since_start_s": seconds_since_start(state, clock)}
        if elapsed >= timeout:
            return {"ready": False, "crashed": False, "elapsed_s": elapsed, "health_status": status,
                    "reason": "/health did not answer 200 within %ss (last: %s; %s)"
                              % (timeout, status or body, unit_summary(state, clock)),
                    "server_info": None, "server_info_endpoint": None, "state": state}
        sleep(poll)


def _generation_summary(generation):
    if generation is None:
        return None
    summary = dict((k, generation.get(k)) for k in ("ok", "status", "latency_s", "completion_tokens", "problem"))
    # What speculation did for this first request (the figure at the switch that a day-two check compares with).
    meta = generation.get("meta") or {}
    summary["verify_steps"] = meta.get("spec_verify_ct")
    summary["accept_length"] = meta.get("spec_accept_length")
    return summary


def unit_summary(state, clock=time.monotonic):
    """The unit as systemd saw it at the last poll, for a server that never became ready: where it is stuck
    (still starting, stopping, or running without listening) tells the operator where to look."""
    since = seconds_since_start(state, clock)
    started = "" if since is None else ", started %d s earlier" % round(since)
    return "the unit was %s (%s), main PID %s%s, restarted %d time(s)" % (
        state.get("ActiveState") or "unknown", state.get("SubState") or "unknown", state.get("MainPID") or "none",
        started, state.get("NRestarts") or 0)


def seconds_since_start(state, clock=time.monotonic):
    """Seconds since systemd started the server's main process (both clocks are CLOCK_MONOTONIC)."""
    try:
        started_us = int(state.get("ExecMainStartTimestampMonotonic") or 0)
    except ValueError:
        return None
    return round(clock() - started_us / 1e6, 2) if started_us else None


def confirm_server_info(info, expected):
    """Differences between what the running server reports and what was asked: [(key, want, got)]."""
    diffs = []
    for key, want in sorted(expected.items()):
        got = info.get(key)
        same = str(got) == str(want) if not isinstance(want, (int, float)) else _num(got) == want
        if not same:
            diffs.append([key, want, got])
    return diffs


def _num(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def server_info_message(mismatch, endpoint):
    """Why a healthy new server is rolled back: the speculative settings it runs other than asked (mismatch:
    [[key, wanted, reported]], confirm_server_info's), read from endpoint."""
    return "the server is healthy but runs other speculative settings than asked (%s): %s" % (
        _text(endpoint), ", ".join("%s=%s (asked %s)" % (key, _text(got), _text(want))
                                   for key, want, got in mismatch or []))


def _text(value):
    """A value as Ansible's templating writes it into a text: null is empty."""
    return "" if value is None else value
