"""sglang_gateway_info's main(): the gateways declared (checked by the seam's own declarations) are read with the
token and timeout; bad declarations and a bad timeout fail with every problem at once. The reading, which asks the
gateways, is mocked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_gateway_info

from .module_runner import always_returned, argument_spec, run_module

SMG = "http://10.0.0.5:30080"
HAPROXY = {"kind": "haproxy", "url": "unix:///run/haproxy/admin.sock", "backend": "sglang"}


@pytest.fixture
def read(monkeypatch):
    calls = []

    def reader(declared, token, timeout):
        calls.append((declared, token, timeout))
        return [dict(d, key="%s %s" % (d["kind"], d["url"]), workers=[], error=None) for d in declared]

    monkeypatch.setattr(sglang_gateway_info, "read", reader)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_every_gateway_is_read_with_the_token_and_timeout(read, check_mode):
    done = run_module(sglang_gateway_info, {"gateway_urls": [SMG + "/"], "gateways": [HAPROXY], "token": "admin-key",
                                            "timeout": 3}, check_mode=check_mode)
    assert not done.failed and done.result["changed"] is False
    assert read == [([{"kind": "smg", "url": SMG}, HAPROXY], "admin-key", 3)]
    assert [g["key"] for g in done.result["gateways"]] == ["smg " + SMG, "haproxy unix:///run/haproxy/admin.sock"]
    assert sorted(done.result) == sorted(always_returned(sglang_gateway_info) + ["changed"])


def test_no_gateway_is_an_empty_list(read):
    done = run_module(sglang_gateway_info, {})
    assert not done.failed and done.result["gateways"] == [] and read == [([], None, 10)]


def test_every_problem_at_once_and_nothing_read(read):
    done = run_module(sglang_gateway_info, {"gateway_urls": ["10.0.0.5:30080"],
                                            "gateways": [{"kind": "haproxy", "url": "/run/haproxy/admin.sock"},
                                                         {"kind": "nginx", "url": "http://lb"}],
                                            "timeout": 0})
    assert done.failed and read == [] and done.result["gateways"] == []
    assert done.msg.split("; ") == [
        "sglang_dflash_gateway_urls must be a list of http:// or https:// URLs, not ['10.0.0.5:30080']",
        "sglang_dflash_gateways entry 1: set backend (the HAProxy backend that holds the fleet's servers)",
        "sglang_dflash_gateways entry 2: kind must be smg or haproxy, not 'nginx'",
        "timeout must be at least 1, not 0",
    ]


def test_the_token_is_kept_out_of_logs():
    assert argument_spec(sglang_gateway_info)["token"]["no_log"] is True


@pytest.mark.parametrize("args, message", [
    ({"gateways": "smg"}, "gateways"),
    ({"timeout": "soon"}, "timeout"),
    ({"worker_url": "http://10.0.0.7:30000"}, "Unsupported parameters"),
])
def test_bad_options(read, args, message):
    done = run_module(sglang_gateway_info, args)
    assert done.failed and message in done.msg, done.msg
    assert read == []
