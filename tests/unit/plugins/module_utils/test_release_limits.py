"""The limits a release states in its own source (module_utils/release_limits.py), read from the real sources of
SGLang 0.5.6, 0.5.11, 0.5.16 and 0.5.23 (tests/fixtures/sglang/<release>/parser-sources.tar.xz)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import release_limits
from ansible_collections.gpufleet.sglang.plugins.module_utils.release_limits import (
    LIMIT_IDS,
    cached_limits_from_package,
    limits_from_package,
    limits_from_source,
)

RELEASES = ["0.5.6", "0.5.11", "0.5.16", "0.5.23"]


@pytest.fixture(scope="module")
def limits(release_sources):
    return dict((version, limits_from_package(str(release_sources[version]))) for version in RELEASES)


def by_source(found):
    return dict((limit["source"], limit) for limit in found["limits"])


def setting_terms(limit):
    return [(t["setting"], t["op"], t.get("value"), t["negated"]) for t in limit["terms"] if t["kind"] == "setting"]


def test_a_release_without_dflash_states_no_dflash_limit(limits):
    assert limits["0.5.6"]["problems"] == []
    assert [limit for limit in limits["0.5.6"]["limits"] if limit["algorithm"]] == []


def test_0_5_11_refuses_dp_attention_and_pipeline_parallelism_in_server_args(limits):
    found = by_source(limits["0.5.11"])
    dp = found["sglang/srt/server_args.py:3321"]
    assert (dp["id"], dp["algorithm"], dp["kind"]) == ("dp_attention", "DFLASH", "algorithm")
    assert dp["message"] == "Currently DFLASH speculative decoding does not support dp attention."
    assert setting_terms(dp) == [("enable_dp_attention", "truthy", None, False)]
    pp = found["sglang/srt/server_args.py:3326"]
    assert (pp["id"], setting_terms(pp)) == ("pipeline_parallel", [("pp_size", "!=", 1, False)])
    assert limits["0.5.11"]["defaults"] == {"pp_size": 1, "enable_dp_attention": False}


def test_0_5_11_ties_trtllm_mha_prefill_to_sm100_and_decode_to_sm90_sm100_sm120(limits):
    found = by_source(limits["0.5.11"])
    prefill, decode = found["sglang/srt/server_args.py:2630"], found["sglang/srt/server_args.py:2643"]
    assert prefill["id"] == decode["id"] == "attention_backend_arch" and prefill["algorithm"] is None
    assert prefill["terms"] == [
        {"kind": "setting", "setting": "prefill_backend", "op": "==", "value": "trtllm_mha", "negated": False},
        {"kind": "arch", "majors": [10], "negated": True}]
    assert prefill["message"].startswith("TRTLLM MHA backend for prefill is only supported on Blackwell GPUs (SM100).")
    assert decode["terms"][1] == {"kind": "arch", "majors": [9, 10, 12], "negated": True}


def test_0_5_16_moved_the_dflash_checks_into_handle_dflash(limits):
    found = by_source(limits["0.5.16"])
    assert found["sglang/srt/arg_groups/speculative_hook.py:154"]["id"] == "dp_attention"
    assert setting_terms(found["sglang/srt/arg_groups/speculative_hook.py:159"]) == [("pp_size", "!=", 1, False)]
    assert found["sglang/srt/server_args.py:5025"]["terms"][1]["majors"] == [10]  # prefill: SM100 only


def test_0_5_23_allows_dp_attention_under_conditions_and_trtllm_mha_on_sm120(limits):
    found = by_source(limits["0.5.23"])
    lm_head = found["sglang/srt/arg_groups/speculative_hook.py:308"]
    assert lm_head["message"] == "DFLASH with dp attention requires --enable-dp-lm-head."
    assert setting_terms(lm_head) == [("attn_dp", "truthy", None, False), ("device", "!=", "npu", False),
                                      ("enable_dp_lm_head", "truthy", None, True)]
    env = found["sglang/srt/arg_groups/speculative_hook.py:314"]
    assert env["terms"][-1] == {"kind": "unknown", "negated": False,
                                "text": "envs.SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION.get()"}
    assert setting_terms(found["sglang/srt/arg_groups/speculative_hook.py:320"]) == [("pp_size", "!=", 1, False)]
    prefill = found["sglang/srt/arg_groups/attention_hook.py:203"]
    assert prefill["terms"][1] == {"kind": "arch", "majors": [9, 10, 12], "negated": True}
    # The source's own conditions beyond the backend and the GPU are kept, never dropped.
    cp = found["sglang/srt/arg_groups/attention_hook.py:233"]
    assert setting_terms(cp)[-1] == ("attn_cp_size", ">", 1, False)
    assert limits["0.5.23"]["defaults"]["attn_cp_size"] == 1 and limits["0.5.23"]["problems"] == []


def test_every_limit_has_a_known_id_and_a_message(limits):
    for version in RELEASES:
        for limit in limits[version]["limits"]:
            assert limit["id"] in LIMIT_IDS and limit["message"], limit


def test_shapes_it_does_not_know_are_unknown_terms_not_guesses():
    source = ('def _handle_dflash(server_args):\n'
              '    if server_args.page_size > 1 and some_helper(server_args):\n'
              '        raise ValueError(f"DFLASH needs page size 1, got {server_args.page_size}")\n'
              '    if is_interesting():\n'
              '        raise ValueError("not a limit of ours")\n')
    found = limits_from_source(source, "x.py")
    assert len(found) == 1
    assert found[0]["terms"] == [
        {"kind": "setting", "setting": "page_size", "op": ">", "value": 1, "negated": False},
        {"kind": "unknown", "text": "some_helper(server_args)", "negated": False}]
    assert found[0]["message"] == "DFLASH needs page size 1, got {server_args.page_size}"


def test_a_package_without_the_sources_is_a_problem_not_limit_free(tmp_path):
    found = limits_from_package(str(tmp_path))
    assert found["limits"] == [] and "no source of the release's limits" in found["problems"][0]


@pytest.fixture
def counted_reads(monkeypatch):
    """How many times the limits were read from the source (not from the cache)."""
    reads = []
    real = release_limits.limits_from_package

    def reading(package_dir):
        reads.append(package_dir)
        return real(package_dir)
    monkeypatch.setattr(release_limits, "limits_from_package", reading)
    return reads


@pytest.fixture
def package_copy(release_sources, tmp_path):
    package = tmp_path / "sglang"
    shutil.copytree(str(release_sources["0.5.23"]), str(package))
    return package


def test_a_warm_read_of_the_limits_reads_no_source_and_gives_the_same_answer(package_copy, tmp_path, counted_reads):
    cache = str(tmp_path / "cache")
    first = cached_limits_from_package(str(package_copy), cache)
    second = cached_limits_from_package(str(package_copy), cache)
    assert first == second == limits_from_package(str(package_copy))
    assert first["limits"] and len(counted_reads) == 1


def test_the_cached_limits_are_read_again_when_a_file_they_come_from_changes(package_copy, tmp_path, counted_reads):
    cache = str(tmp_path / "cache")
    cached_limits_from_package(str(package_copy), cache)
    hook = package_copy / "srt" / "arg_groups" / "speculative_hook.py"
    text = hook.read_text()
    stat = hook.stat()
    hook.write_text(text.replace("only supports pp_size == 1", "only supports one pipeline stage"))
    os.utime(str(hook), ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))
    again = cached_limits_from_package(str(package_copy), cache)
    assert len(counted_reads) == 2
    assert any("one pipeline stage" in limit["message"] for limit in again["limits"])
    # A file added to a folder the limits are read from changes the folder's fingerprint.
    (package_copy / "srt" / "arg_groups" / "extra_checks.py").write_text("X = 1\n")
    os.utime(str(package_copy / "srt" / "arg_groups"), ns=(1, stat.st_mtime_ns + 2 * 10 ** 9))
    cached_limits_from_package(str(package_copy), cache)
    assert len(counted_reads) == 3


def test_check_mode_and_a_read_with_problems_write_no_cache(package_copy, tmp_path, counted_reads):
    cache = tmp_path / "cache"
    cached_limits_from_package(str(package_copy), str(cache), check_mode=True)
    assert not cache.exists() or not list(cache.iterdir())
    empty = tmp_path / "empty"
    empty.mkdir()
    for _round in range(2):
        assert cached_limits_from_package(str(empty), str(cache))["problems"]
    assert len(counted_reads) == 3 and not list(cache.glob("*.json"))


def test_a_cache_entry_of_another_shape_is_a_miss_not_an_answer(package_copy, tmp_path, counted_reads):
    cache = tmp_path / "cache"
    cached_limits_from_package(str(package_copy), str(cache))
    for entry in cache.glob("*.json"):
        entry.write_text('{"format": 3, "limits": "none"}')
    assert cached_limits_from_package(str(package_copy), str(cache))["limits"]
    assert len(counted_reads) == 2
