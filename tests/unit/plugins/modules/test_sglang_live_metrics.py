"""sglang_live_metrics' main(): the targets (each instance label defaulting to the URL's host and port) and the
window reach observe, the bounds of window and interval, a target URL that is not http(s). observe, which waits the
window and asks Prometheus or the servers, is mocked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_live_metrics

from .module_runner import always_returned, run_module

TARGETS = [{"name": "gpu-01", "url": "http://10.0.0.1:30000"},
           {"name": "gpu-02", "url": "https://gpu-02.internal:30000", "instance": "gpu-02:9100"}]
OBSERVED = {"source": "prometheus", "figures": {"gpu-01": {}, "gpu-02": {}}, "gateway": None, "problems": [],
            "notes": [], "window_s": 600}


@pytest.fixture
def observe(monkeypatch):
    calls = []

    def observed(*args):
        calls.append(args)
        return dict(OBSERVED)

    monkeypatch.setattr(sglang_live_metrics, "observe", observed)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_targets_and_the_window_reach_observe(observe, check_mode):
    done = run_module(sglang_live_metrics, {"targets": TARGETS, "prometheus_url": "http://prometheus:9090",
                                            "fallback_to_scrape": True}, check_mode=check_mode)
    assert not done.failed and done.result == dict(OBSERVED, changed=False)
    assert sorted(done.result) == sorted(always_returned(sglang_live_metrics) + ["changed"])
    ((targets, window, interval, prometheus, fallback, gateway),) = observe
    assert targets == [dict(TARGETS[0], instance="10.0.0.1:30000"), TARGETS[1]]
    assert (window, interval, prometheus, fallback, gateway) == (600, 15, "http://prometheus:9090", True, None)


def test_a_preflight_window_of_0_and_the_gateways_metrics(observe):
    run_module(sglang_live_metrics, {"targets": TARGETS[:1], "window": 0, "interval": 1,
                                     "gateway_metrics_url": "http://10.0.0.5:29000/metrics"})
    assert observe[0][1:] == (0, 1, None, False, "http://10.0.0.5:29000/metrics")


@pytest.mark.parametrize("args, message", [
    ({"window": -1}, "window must be between 0 and 86400, not -1"),
    ({"window": 86401}, "window must be between 0 and 86400, not 86401"),
    ({"interval": 0}, "interval must be between 1 and 3600, not 0"),
    ({"interval": 3601}, "interval must be between 1 and 3600, not 3601"),
    ({"targets": [{"name": "gpu-03", "url": "10.0.0.3:30000"}]},
     "host gpu-03: metrics URL '10.0.0.3:30000' is not an http(s) URL; set sglang_dflash_metrics_url"),
    ({"targets": [{"name": "gpu-03", "url": "http://"}]},
     "host gpu-03: metrics URL 'http://' is not an http(s) URL; set sglang_dflash_metrics_url"),
])
def test_bounds_and_urls_fail_before_observing(observe, args, message):
    done = run_module(sglang_live_metrics, dict({"targets": TARGETS}, **args))
    assert done.failed and done.msg == message and observe == []


@pytest.mark.parametrize("args, message", [
    ({}, "missing required arguments: targets"),
    ({"targets": [{"url": "http://10.0.0.1:30000"}]}, "name"),
    ({"targets": [{"name": "gpu-01", "url": "http://10.0.0.1:30000", "port": 30000}]}, "port"),
    ({"targets": TARGETS, "fallback_to_scrape": "sometimes"}, "fallback_to_scrape"),
])
def test_bad_options(observe, args, message):
    done = run_module(sglang_live_metrics, args)
    assert done.failed and message in done.msg, done.msg
    assert observe == []
