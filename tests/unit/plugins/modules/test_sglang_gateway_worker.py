"""sglang_gateway_worker's main(): each state calls its step of the seam (take_out parked or draining, put_back with
the previous URL, preflight with allow_missing), restrict_to, check mode as the steps' dry run, the result's shape on
success and on each failure. The gateways are mocked: connect gives a stand-in, the steps record their arguments."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.base import GatewayError
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_gateway_worker

from .module_runner import Calls, always_returned, run_module

SMG = "http://10.0.0.5:30080"
HAPROXY = {"kind": "haproxy", "url": "tcp://127.0.0.1:9999", "backend": "sglang"}
WORKER = "http://10.0.0.7:30000"
EMPTY = {"gateways": [], "changed_gateways": [], "in_flight": None, "seconds": 0.0}


@pytest.fixture
def seam(monkeypatch):
    """The seam's steps mocked; calls holds (step, args, kwargs), step(name, answer) sets a step's answer (or the
    exception it raises); the gateways are (declaration, token) pairs."""
    calls = Calls()

    def step(name, answer):
        def run(*args, **kwargs):
            calls.append((name, args, kwargs))
            if isinstance(answer, Exception):
                raise answer
            return answer
        monkeypatch.setattr(sglang_gateway_worker, name, run)

    monkeypatch.setattr(sglang_gateway_worker, "connect", lambda declaration, token: (declaration, token))
    step("describe", [{"gateway": "smg " + SMG, "kind": "smg", "state": "in rotation"}])
    step("take_out", {"changed": True, "changed_gateways": ["smg " + SMG], "in_flight": 3, "seconds": 1.5})
    step("put_back", {"changed": False, "changed_gateways": [], "seconds": 0.1})
    step("preflight", ([{"gateway": "smg " + SMG, "kind": "smg", "state": "in rotation"}], []))
    calls.step = step
    return calls


def run(args, check_mode=False):
    base = {"gateway_urls": [SMG], "gateways": [HAPROXY], "token": "admin-key", "worker_url": WORKER}
    base.update(args)
    return run_module(sglang_gateway_worker, base, check_mode=check_mode)


GATEWAYS = [({"kind": "smg", "url": SMG}, "admin-key"), (HAPROXY, "admin-key")]


@pytest.mark.parametrize("state, park", [("absent", True), ("draining", False)])
@pytest.mark.parametrize("check_mode", [False, True])
def test_out_of_rotation(seam, state, park, check_mode):
    done = run({"state": state, "timeout": 30}, check_mode=check_mode)
    assert not done.failed
    assert seam[0] == ("take_out", (GATEWAYS, WORKER, 30), {"park": park, "dry_run": check_mode})
    assert seam[1] == ("describe", (GATEWAYS, WORKER), {})
    assert done.result == {"changed": True, "gateways": [{"gateway": "smg " + SMG, "kind": "smg",
                                                          "state": "in rotation"}],
                           "changed_gateways": ["smg " + SMG], "in_flight": 3, "seconds": 1.5}
    assert set(always_returned(sglang_gateway_worker)) <= set(done.result)


@pytest.mark.parametrize("check_mode", [False, True])
def test_back_in_rotation_where_it_was(seam, check_mode):
    done = run({"previous_worker_url": "http://10.0.0.7:30001"}, check_mode=check_mode)
    assert seam[0] == ("put_back", (GATEWAYS, WORKER, 60),
                       {"previous_url": "http://10.0.0.7:30001", "dry_run": check_mode})
    # put_back says nothing of requests in flight.
    assert (done.result["changed"], done.result["in_flight"], done.result["seconds"]) == (False, None, 0.1)


@pytest.mark.parametrize("allow_missing", [False, True])
def test_registered_only_checks(seam, allow_missing):
    done = run({"state": "registered", "allow_missing": allow_missing})
    assert seam == [("preflight", (GATEWAYS, WORKER, allow_missing), {})]
    registered = [{"gateway": "smg " + SMG, "kind": "smg", "state": "in rotation"}]
    assert done.result == dict(EMPTY, changed=False, gateways=registered)


def test_a_gateway_that_cannot_take_the_worker_fails_the_check_with_where_the_others_have_it(seam):
    answered = [{"gateway": "smg " + SMG, "kind": "smg", "state": "not registered"}]
    seam.step("preflight", (answered, ["smg %s does not list %s" % (SMG, WORKER), "haproxy: permission denied"]))
    done = run({"state": "registered"})
    message = "smg %s does not list %s; haproxy: permission denied" % (SMG, WORKER)
    assert done.failed and done.result == dict(EMPTY, gateways=answered, msg=message)


def test_restrict_to_puts_the_worker_back_into_those_gateways_only(seam):
    run({"restrict_to": [SMG + "/"]})
    assert seam[0] == ("put_back", ([({"kind": "smg", "url": SMG}, "admin-key")], WORKER, 60),
                       {"previous_url": None, "dry_run": False})
    # None of the gateways: nothing asked, nothing changed.
    del seam[:]
    done = run({"restrict_to": ["http://10.0.0.99:30080"]})
    assert done.result == dict(EMPTY, changed=False) and seam == []


def test_a_gateway_error_fails_with_the_empty_shape(seam):
    seam.step("take_out", GatewayError("smg %s: 401 Unauthorized: set sglang_dflash_gateway_token" % SMG))
    done = run({"state": "absent"})
    assert done.failed and done.result == dict(EMPTY, msg="smg %s: 401 Unauthorized: set sglang_dflash_gateway_token"
                                               % SMG)


@pytest.mark.parametrize("args, problems", [
    ({"gateway_urls": [], "gateways": []}, ["no gateway: set gateways (or gateway_urls)"]),
    ({"worker_url": "10.0.0.7:30000", "previous_worker_url": "ftp://x", "timeout": 0},
     ["worker_url must be an http:// or https:// URL, not '10.0.0.7:30000'",
      "previous_worker_url must be an http:// or https:// URL, not 'ftp://x'", "timeout must be at least 1, not 0"]),
    ({"gateways": [{"kind": "haproxy", "url": "tcp://127.0.0.1:9999"}]},
     ["sglang_dflash_gateways entry 1: set backend (the HAProxy backend that holds the fleet's servers)"]),
])
def test_every_problem_at_once_before_any_gateway_is_asked(seam, args, problems):
    done = run(args)
    assert done.failed and done.msg.split("; ") == problems
    assert done.result == dict(EMPTY, msg=done.msg) and seam == []


@pytest.mark.parametrize("args, message", [
    ({"worker_url": None}, "worker_url"),
    ({"state": "present", "worker_url": WORKER, "timeout": "soon"}, "timeout"),
    ({"state": "gone"}, "value of state must be one of: absent, draining, present, registered"),
    ({"allow_missing": "perhaps"}, "allow_missing"),
])
def test_bad_options(seam, args, message):
    done = run(args)
    assert done.failed and message in done.msg, done.msg
    assert seam == []
