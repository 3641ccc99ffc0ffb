"""Refusals before any change for what the installed release will reject or crash on with the new command line on
this host's GPUs (plugin_utils/_release_checks.py, through the deployment plan); on real releases' flags and limits
read from their real sources, and GPUs from the nvidia-smi fixtures (B200 and RTX PRO 6000 ones are SIMULATED)."""

import tarfile
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.gpu_arch import describe
from ansible_collections.gpufleet.sglang.plugins.module_utils.nvidia_smi import parse_gpus
from ansible_collections.gpufleet.sglang.plugins.module_utils.release_limits import limits_from_package
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._messages import plan_lines
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._release_checks import KNOWN_ISSUES, version_tuple
from plan_facts import NEXTN, SETTINGS, ddtree_build_flags, facts_for

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
RTX = "rtx-pro-6000x8-SIMULATED.gpus.csv"
B200 = "b200x8-SIMULATED.gpus.csv"
H100 = "h100x8.gpus.csv"


@pytest.fixture(scope="module")
def release_limits(tmp_path_factory):
    root = tmp_path_factory.mktemp("sglang-sources")
    out = {}
    for version in ("0.5.11", "0.5.16", "0.5.23"):
        with tarfile.open(FIXTURES / "sglang" / version / "parser-sources.tar.xz") as tar:
            tar.extractall(root / version)
        out[version] = limits_from_package(str(root / version / "sglang"))
    return out


def host(release_limits, version, gpus_csv, line=NEXTN):
    facts = facts_for(line, version)
    facts["package"] = {"version": version}
    facts["limits"] = release_limits[version]
    facts["gpus"]["gpus"] = [dict(g, architecture=describe(g["compute_capability"])["architecture"],
                                  sm=describe(g["compute_capability"])["sm"])  # as query_gpus adds them
                             for g in parse_gpus((FIXTURES / "nvidia-smi" / gpus_csv).read_text())]
    return facts


def plan_with(release_limits, version, gpus_csv, extra_args=(), **settings):
    return deployment_plan(host(release_limits, version, gpus_csv),
                           dict(SETTINGS, extra_args=list(extra_args), **settings))


def limit_errors(plan):
    return [e for e in plan["errors"] if "sglang_dflash_allow_release_limits" in e]


def test_trtllm_mha_on_sm120_is_refused_with_the_release_and_the_gpu_named(release_limits):
    plan = plan_with(release_limits, "0.5.16", RTX, ["--attention-backend", "trtllm_mha"])
    assert limit_errors(plan) == [
        "sglang 0.5.16 on GPUs 0,1,2,3,4,5,6,7 (NVIDIA RTX PRO 6000 Blackwell Server Edition, Blackwell sm_120): "
        "--attention-backend trtllm_mha: TRTLLM MHA backend for prefill is only supported on Blackwell GPUs (SM100). "
        "Please use a different prefill backend. (the release's check at sglang/srt/server_args.py:5025); drop the "
        "attention backend flag or use flashinfer, or accept the risk with sglang_dflash_allow_release_limits: "
        "[attention_backend_arch]"]
    assert plan["files"] == {} and not plan["needs_change"]


def test_0_5_23_admits_sm120_in_its_own_check_so_the_table_names_the_upstream_crash(release_limits):
    plan = plan_with(release_limits, "0.5.23", RTX, ["--attention-backend", "trtllm_mha"])
    [error] = limit_errors(plan)
    assert error.startswith("sglang 0.5.23 on GPUs 0,1,2,3,4,5,6,7 (NVIDIA RTX PRO 6000 Blackwell Server Edition, "
                            "Blackwell sm_120): --attention-backend trtllm_mha: trtllm_mha runs FlashInfer's "
                            "TllmGenFmhaRunner")
    assert "(upstream sglang#40558, open; flashinfer#3263)" in error
    assert "drop --attention-backend trtllm_mha or use --attention-backend flashinfer" in error


@pytest.mark.parametrize("version", ["0.5.11", "0.5.16", "0.5.23"])
def test_trtllm_mha_on_sm100_switches(release_limits, version):
    plan = plan_with(release_limits, version, B200, ["--attention-backend", "trtllm_mha"])
    assert plan["errors"] == [] and plan["needs_change"]
    assert "--attention-backend trtllm_mha" in plan["exec_start"]


def test_trtllm_mha_on_hopper_follows_each_release(release_limits):
    # 0.5.16: prefill on SM100 only; 0.5.23 admits SM90.
    assert limit_errors(plan_with(release_limits, "0.5.16", H100, ["--attention-backend", "trtllm_mha"]))
    assert plan_with(release_limits, "0.5.23", H100, ["--attention-backend", "trtllm_mha"])["errors"] == []
    # Only the decode backend: SM90 is allowed by every release.
    assert plan_with(release_limits, "0.5.16", H100, ["--decode-attention-backend", "trtllm_mha"])["errors"] == []


def test_an_explicit_override_is_allowed_and_said(release_limits):
    plan = plan_with(release_limits, "0.5.23", RTX, ["--attention-backend", "trtllm_mha"],
                     allow_release_limits=["attention_backend_arch"])
    assert plan["errors"] == [] and plan["needs_change"]
    [accepted] = plan["release_limits"]["accepted"]
    assert accepted.endswith("[attention_backend_arch, accepted by sglang_dflash_allow_release_limits]")
    assert "release limits accepted: " + accepted in plan_lines(plan)


def test_disaggregation_decode_is_refused_naming_the_upstream_issue(release_limits):
    plan = plan_with(release_limits, "0.5.23", H100, ["--disaggregation-mode", "decode"])
    [error] = limit_errors(plan)
    assert "--disaggregation-mode decode: DFLASH crashes on the decode side of prefill/decode disaggregation" in error
    assert "sglang#36140" in error and "pull request #34285" in error
    assert plan_with(release_limits, "0.5.23", H100, ["--disaggregation-mode", "prefill"])["errors"] == []


@pytest.mark.parametrize("version, args, refused", [
    ("0.5.11", ["--enable-dp-attention", "--dp-size", "2"], "does not support dp attention"),
    ("0.5.16", ["--enable-dp-attention", "--dp-size", "2"], "does not support dp attention"),
    ("0.5.23", ["--attn-dp-size", "2"], "DFLASH with dp attention requires --enable-dp-lm-head."),
    ("0.5.11", ["--pp-size", "2"], "--pp-size 2: Currently DFLASH speculative decoding only supports pp_size == 1."),
    ("0.5.23", ["--pipeline-parallel-size", "2"], "Currently DFLASH speculative decoding only supports pp_size == 1"),
])
def test_parallel_layouts_the_release_refuses_for_dflash(release_limits, version, args, refused):
    errors = limit_errors(plan_with(release_limits, version, H100, args))
    assert len(errors) == 1 and refused in errors[0], errors


def test_what_the_source_cannot_tell_is_not_refused_but_kept(release_limits):
    # 0.5.23 with dp attention and --enable-dp-lm-head: the last condition is an environment variable's default.
    plan = plan_with(release_limits, "0.5.23", H100, ["--attn-dp-size", "2", "--enable-dp-lm-head"])
    assert plan["errors"] == []
    [unknown] = plan["release_limits"]["unknown"]
    assert "SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION=0" in unknown


def test_the_running_unit_s_own_flags_count_too(release_limits):
    facts = host(release_limits, "0.5.16", RTX, NEXTN + " --attention-backend trtllm_mha")
    plan = deployment_plan(facts, SETTINGS)
    assert len(limit_errors(plan)) == 1


def test_a_plain_switch_is_not_refused_on_any_gpu(release_limits):
    for version in ("0.5.11", "0.5.16", "0.5.23"):
        for gpus in (RTX, B200, H100):
            assert plan_with(release_limits, version, gpus)["errors"] == []


def test_bad_override_ids_are_refused_by_name(release_limits):
    plan = plan_with(release_limits, "0.5.23", H100, allow_release_limits=["trtllm"])
    assert any(e.startswith("sglang_dflash_allow_release_limits must be a list of limit ids") for e in plan["errors"])


def test_the_table_rows_name_upstream_releases_and_how_to_lift():
    for row in KNOWN_ISSUES:
        assert row["upstream"] and row["todo"] and len(row["releases"]) == 2
    assert version_tuple("0.5.23.post1") == (0, 5, 23) and version_tuple("abc") is None


def test_the_fleet_row_says_why_not_for_the_report_s_filter(release_limits):
    from ansible_collections.gpufleet.sglang.plugins.plugin_utils._records import fleet_row

    def row(version, gpus, extra_args):
        facts = host(release_limits, version, gpus)
        return fleet_row("gpu-07", facts, deployment_plan(facts, dict(SETTINGS, extra_args=extra_args)))
    assert row("0.5.23", RTX, ["--attention-backend", "trtllm_mha"])["why_not"] == "gpu"
    assert row("0.5.23", H100, ["--disaggregation-mode", "decode"])["why_not"] == "release"
    assert row("0.5.23", H100, ["--no-such-flag"])["why_not"] == "other"
    ready = row("0.5.23", B200, ["--attention-backend", "trtllm_mha"])
    assert (ready["status"], ready["why_not"]) == ("ready", None)
    assert [g["sm"] for g in ready["facts"]["gpus"]["gpus"]] == ["sm_100"] * 8


def test_ddtree_needs_page_size_1_from_the_table_where_the_build_s_source_says_nothing(release_limits):
    # A patched 0.5.23 build with DDTree (pull request 29907): its source here is 0.5.23's, which has no DDTREE check.
    facts = host(release_limits, "0.5.23", H100)
    facts.update(flags={"list": ddtree_build_flags()}, algorithms=["DFLASH", "DDTREE"])
    settings = dict(SETTINGS, algorithm="DDTREE")
    [error] = limit_errors(deployment_plan(facts, dict(settings, extra_args=["--page-size", "16"])))
    assert "--page-size 16: DDTree needs --page-size 1" in error and "pull request #29907" in error
    assert deployment_plan(facts, dict(settings, extra_args=["--page-size", "1"]))["errors"] == []
    assert deployment_plan(facts, settings)["errors"] == []  # unset: the build's default
    # The table row is for DDTREE only.
    assert deployment_plan(facts, dict(SETTINGS, extra_args=["--page-size", "16"]))["errors"] == []
