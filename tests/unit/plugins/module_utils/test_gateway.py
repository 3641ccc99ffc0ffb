"""The gateway steps against a fake SMG that behaves as SMG 1.13.0 was measured to (module_utils/gateways)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.seam import (
    GatewayError,
    put_back,
    require_registered,
    take_out,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.smg import SMGGateway, error_ratio

WORKER = "http://127.0.0.1:31001"
OTHER = "http://127.0.0.1:31002"


class FakeSMG(object):
    """GET/DELETE/POST /workers with SMG's answers: a removal drains for `drain_reads` reads before the worker
    leaves the list, an addition is listed after `add_reads` reads, 409 while the URL is held."""

    def __init__(self, urls, token="admin", drain_reads=3, add_reads=2, reachable=True):
        self.workers = [{"id": "id-%d" % i, "url": u, "status": "ready", "is_healthy": True}
                        for i, u in enumerate(urls)]
        self.token, self.drain_reads, self.add_reads, self.reachable = token, drain_reads, add_reads, reachable
        self.pending = {}  # url -> reads left until listed
        self.calls = []

    def __call__(self, method, url, token, body, timeout):
        path = url.split("://", 1)[1].split("/", 1)[1]
        self.calls.append((method, "/" + path))
        if not self.reachable:
            return 0, "[Errno 111] Connection refused"
        if token != self.token:
            return 401, "Invalid authentication token"
        if method == "GET":
            self._tick()
            return 200, {"workers": [dict(w) for w in self.workers if not w.get("_gone")], "total": len(self.workers)}
        if method == "DELETE":
            worker = next((w for w in self.workers if w["id"] == path.split("/")[1]), None)
            if worker is None:
                return 404, {"error": "not found", "code": "WORKER_NOT_FOUND"}
            worker.update(status="draining", is_healthy=False, _left=self.drain_reads)
            return 202, {"status": "accepted"}
        if method == "POST":
            if any(w["url"] == body["url"] for w in self.workers):
                return 409, {"error": "Worker already exists", "code": "WORKER_ALREADY_EXISTS"}
            if body["url"] in self.pending:
                return 409, {"error": "in progress", "code": "WORKER_CREATE_IN_PROGRESS"}
            self.pending[body["url"]] = self.add_reads
            return 202, {"status": "accepted"}
        return 405, "method not allowed"

    def _tick(self):
        for worker in list(self.workers):
            if worker.get("status") == "draining":
                worker["_left"] -= 1
                if worker["_left"] <= 0:
                    self.workers.remove(worker)
        for url in list(self.pending):
            self.pending[url] -= 1
            if self.pending[url] <= 0:
                del self.pending[url]
                self.workers.append({"id": "id-new-%s" % url[-5:], "url": url, "status": "ready", "is_healthy": True})

    def status(self, url):
        return next((w["status"] for w in self.workers if w["url"] == url), None)


def gateways(smg, token="admin"):
    return [SMGGateway("http://127.0.0.1:30080", token, request=smg)]


def wait(**kw):
    return dict(sleep=lambda _s: None, **kw)


def test_take_out_waits_until_the_gateway_no_longer_lists_the_worker_and_is_idempotent():
    smg = FakeSMG([WORKER, OTHER])
    result = take_out(gateways(smg), WORKER + "/", 10, **wait())
    assert result["changed"] and result["changed_gateways"] == ["http://127.0.0.1:30080"]
    assert smg.status(WORKER) is None and smg.status(OTHER) == "ready"
    assert [c for c in smg.calls if c[0] == "DELETE"] == [("DELETE", "/workers/id-0")]
    assert take_out(gateways(smg), WORKER, 10, **wait())["changed"] is False


def test_put_back_waits_while_the_removal_still_holds_the_url_then_until_ready():
    smg = FakeSMG([WORKER, OTHER], drain_reads=4)
    smg("DELETE", "http://g/workers/id-0", "admin", None, 1)  # a removal under way (draining)
    result = put_back(gateways(smg), WORKER, 10, **wait())
    assert result["changed"] and smg.status(WORKER) == "ready"
    assert put_back(gateways(smg), WORKER, 10, **wait())["changed"] is False


def test_check_mode_changes_nothing():
    smg = FakeSMG([WORKER])
    assert take_out(gateways(smg), WORKER, 10, dry_run=True, **wait())["changed"] is True
    assert smg.status(WORKER) == "ready" and not [c for c in smg.calls if c[0] != "GET"]


def test_put_back_gives_up_naming_the_gateway_when_the_worker_never_gets_ready():
    smg = FakeSMG([OTHER], add_reads=10 ** 6)
    ticks = iter(range(1000))
    with pytest.raises(GatewayError, match="does not list worker http://127.0.0.1:31001 as ready 5s after"):
        put_back(gateways(smg), WORKER, 5, clock=lambda: next(ticks), **wait())


@pytest.mark.parametrize("smg, token, message", [
    (FakeSMG([WORKER]), "wrong", "gateway http://127.0.0.1:30080 refused the token (401 Invalid authentication "
                                 "token): set sglang_dflash_gateway_token"),
    (FakeSMG([WORKER], reachable=False), "admin", "gateway http://127.0.0.1:30080 cannot be reached: [Errno 111]"),
    (FakeSMG([OTHER]), "admin", "gateway http://127.0.0.1:30080 does not list worker http://127.0.0.1:31001 (it "
                                "lists: http://127.0.0.1:31002): set sglang_dflash_gateway_worker_url"),
])
def test_the_preflight_names_the_gateway_and_what_to_set(smg, token, message):
    with pytest.raises(GatewayError) as exc:
        require_registered(gateways(smg, token), WORKER)
    assert message in str(exc.value)
    assert [c for c in smg.calls if c[0] != "GET"] == []


def test_the_preflight_reports_the_worker_in_rotation():
    states = require_registered(gateways(FakeSMG([WORKER])), WORKER)
    assert states == [{"gateway": "http://127.0.0.1:30080", "kind": "smg", "state": "in rotation", "status": "ready",
                       "id": "id-0", "in_flight": None}]


def test_draining_then_absent_removes_once_and_an_unhealthy_worker_is_not_in_rotation():
    smg = FakeSMG([WORKER, OTHER])
    assert take_out(gateways(smg), WORKER, 10, park=False, **wait())["changed"] is True
    assert take_out(gateways(smg), WORKER, 10, **wait())["changed"] is False  # SMG has nothing left to park
    smg.workers[0]["is_healthy"] = False
    assert gateways(smg)[0].find(OTHER)["in_rotation"] is False


def test_gateway_error_ratio_from_smg_responses():
    first = 'smg_http_responses_total{path="/generate",status_code="200",error_code=""} 100\n'
    last = ('smg_http_responses_total{path="/generate",status_code="200",error_code=""} 190\n'
            'smg_http_responses_total{path="/generate",status_code="503",error_code="x"} 10\n')
    assert error_ratio(first, last) == 0.1
    assert error_ratio(first, first) is None
