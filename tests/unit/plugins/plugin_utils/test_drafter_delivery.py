"""Where each service's drafter comes from, and what the deploy summary says of it
(plugin_utils/_drafter_delivery.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _drafter_delivery as dd

HUB = {"repo": "lab/qwen-dflash", "revision": "a" * 40}
PATH = "/var/lib/gpufleet-sglang/drafters/lab--qwen-dflash/" + "a" * 40


def test_services_naming_one_source_share_it():
    sources = dd.drafter_sources(HUB, [{"name": "sglang-qwen-a", "drafter": dict(HUB)},
                                       {"name": "sglang@*", "drafter": dict(HUB), "block_size": 16},
                                       {"name": "sglang-other"}])
    assert sources == [{"source": HUB, "services": ["*", "sglang-qwen-a", "sglang@*"]}]


def test_a_controller_directory_and_a_repo_are_two_sources():
    sources = dd.drafter_sources({"src": "/srv/d/"}, [{"name": "b", "drafter": HUB}])
    assert [s["services"] for s in sources] == [["*"], ["b"]]


@pytest.mark.parametrize("source, message", [
    ({"repo": "lab/x"}, "needs a pinned revision"),
    ({"repo": "lab/x", "revision": "r", "src": "/d"}, r"either repo \(with revision\) or src, not both"),
    ({"name": "x"}, "not neither"),
    ({"src": "/d", "sha": "x"}, "unknown keys sha"),
    ("lab/x", "must be a mapping"),
])
def test_bad_sources_are_refused_naming_where(source, message):
    with pytest.raises(dd.DrafterSourceError, match=message):
        dd.drafter_sources(None, [{"name": "sglang-a", "drafter": source}])


def test_drafter_and_draft_model_path_in_one_entry_are_refused():
    with pytest.raises(dd.DrafterSourceError, match=r"entry 1 \(sglang-a\) drafter: set drafter or draft_model_path"):
        dd.drafter_sources(None, [{"name": "sglang-a", "drafter": HUB, "draft_model_path": "/m"}])


def test_report_apply_and_summary():
    results = [{"item": {"source": HUB, "services": ["*", "sglang@*"]}, "source": "hub", "repo": HUB["repo"],
                "revision": HUB["revision"], "commit": HUB["revision"], "path": PATH, "verified": True,
                "total_bytes": 4194550, "files": 4, "bytes_transferred": 4194550, "changed": True}]
    drafters = dd.drafter_report(results)
    assert drafters[0]["services"] == ["*", "sglang@*"] and drafters[0]["verified"]
    services = dd.apply_to_services([{"name": "sglang@*", "drafter": HUB}, {"name": "sglang-b"}], drafters)
    assert services == [{"name": "sglang@*", "draft_model_path": PATH}, {"name": "sglang-b"}]
    assert dd.summary_lines("gpu-07", drafters) == [
        "gpu-07: drafter for every other service, sglang@*: hub lab/qwen-dflash@%s, 4194550 bytes, verified, "
        "fetched 4194550 bytes" % ("a" * 40)]


def test_a_failed_fetch_is_not_reported_as_a_drafter():
    with pytest.raises(dd.DrafterSourceError, match="no revision"):
        dd.drafter_report([{"failed": True, "msg": "host h: the mirror has no revision"}])
