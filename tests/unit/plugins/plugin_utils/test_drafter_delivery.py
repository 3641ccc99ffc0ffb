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


def test_report_and_apply():
    results = [{"item": {"source": HUB, "services": ["*", "sglang@*"]}, "source": "hub", "repo": HUB["repo"],
                "revision": HUB["revision"], "commit": HUB["revision"], "path": PATH, "verified": True,
                "total_bytes": 4194550, "files": 4, "bytes_transferred": 4194550, "changed": True}]
    drafters = dd.drafter_report(results)
    assert drafters[0]["services"] == ["*", "sglang@*"] and drafters[0]["verified"]
    # The entry keeps its source (the plan's settings say where the drafter came from) and gets the copy's path.
    services = dd.apply_to_services([{"name": "sglang@*", "drafter": HUB}, {"name": "sglang-b"}], drafters)
    assert services == [{"name": "sglang@*", "drafter": HUB, "draft_model_path": PATH}, {"name": "sglang-b"}]
    assert dd.role_path(drafters, None) == PATH
    assert dd.role_path([], "/models/d") == "/models/d"
    assert dd.role_path([{"services": ["b"], "path": PATH}], None) is None


def test_a_drafter_path_beside_the_roles_drafter_is_refused_naming_the_host():
    with pytest.raises(dd.DrafterSourceError, match=r"^host gpu-07: sglang_dflash_drafter and "
                                                    r"sglang_dflash_draft_model_path \(/models/d\) are both set"):
        dd.drafter_sources(HUB, [], "gpu-07", "/models/d")
    with pytest.raises(dd.DrafterSourceError, match=r"^host gpu-07: sglang_dflash_services entry 1"):
        dd.drafter_sources(None, [{"name": "a", "drafter": {"repo": "lab/x"}}], "gpu-07")


def test_a_run_that_fetches_nothing_knows_the_path_of_a_pinned_commit_only():
    sources = dd.drafter_sources(HUB, [{"name": "b", "drafter": {"repo": "lab/x", "revision": "v1"}},
                                       {"name": "c", "drafter": {"src": "/srv/drafters/qwen/"}}])
    expected = dd.expected_drafters(sources, "/var/lib/gpufleet-sglang/drafters")
    assert [(d["source"], d["repo"], d["path"]) for d in expected] == [
        ("hub", "lab/qwen-dflash", PATH), ("hub", "lab/x", None), ("controller", "qwen", None)]
    services = dd.apply_to_services([{"name": "b", "drafter": {"repo": "lab/x", "revision": "v1"}}], expected)
    assert "draft_model_path" not in services[0]


COPY = {"source": "hub", "repo": HUB["repo"], "revision": HUB["revision"], "commit": HUB["revision"],
        "verified_at": "2026-12-06T07:00:00Z", "files": 4, "total_bytes": 4194550, "complete": True}


@pytest.mark.parametrize("draft_model, verified, summary", [
    ({"dir_exists": True, "store_copy": COPY}, True,
     "hub lab/qwen-dflash@%s: verified copy present (4194550 bytes, verified 2026-12-06T07:00:00Z)" % HUB["revision"]),
    ({"dir_exists": True, "store_copy": dict(COPY, complete=False)}, False,
     "hub lab/qwen-dflash@%s: %s is not a complete verified copy (a deployment fetches it again)"
     % (HUB["revision"], PATH)),
    ({"dir_exists": True, "store_copy": dict(COPY, commit="b" * 40, revision="b" * 40)}, False,
     "is not a complete verified copy"),
    ({"dir_exists": False, "store_copy": None}, False,
     "hub lab/qwen-dflash@%s: not on the host yet (a deployment, or playbooks/fetch_drafter.yml, fetches it)"
     % HUB["revision"]),
])
def test_the_reports_drafter_says_where_it_comes_from_and_whether_its_verified_copy_is_there(
        draft_model, verified, summary):
    state = dd.drafter_state({"drafter": HUB, "draft_model_path": PATH}, draft_model)
    assert state["source"] == "hub" and state["path"] == PATH and state["verified"] is verified
    assert summary in state["summary"]


def test_the_reports_drafter_of_a_plain_path_and_of_a_controller_directory():
    plain = dd.drafter_state({"draft_model_path": "/models/d"}, {"dir_exists": True})
    assert plain == {"source": "path", "path": "/models/d", "present": True, "verified": None,
                     "summary": "/models/d (on the host)"}
    # No drafter set at all: said so, not "None (on the host: missing)".
    assert dd.drafter_state({"draft_model_path": None}, None)["summary"] == (
        "none set (sglang_dflash_draft_model_path or sglang_dflash_drafter)")
    pushed = dd.drafter_state({"drafter": {"src": "/srv/d"}, "draft_model_path": None}, None)
    assert pushed["source"] == "controller" and pushed["present"] is False
    assert pushed["summary"] == "controller /srv/d: resolved when a deployment fetches it"


def test_a_failed_fetch_is_not_reported_as_a_drafter():
    with pytest.raises(dd.DrafterSourceError, match="no revision"):
        dd.drafter_report([{"failed": True, "msg": "host h: the mirror has no revision"}])
