"""The lab stand-in's SIMULATED speed model (tests/standin/gpufleet_standin.py), as pure functions: no server runs.

The figures are the stand-in's, not a GPU's: what is tested is that the model keeps its documented arithmetic
(block size, step cost, noise, speculation that stops), since the lab's scenarios and judges rely on it."""

import json
import random
import statistics
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "standin"))

import gpufleet_standin as standin  # noqa: E402

LAB_LOAD = 4  # 16 clients over 4 servers
NEW = (0, 5, 23)


def drafter(accept=6.0, cost=1.3, growth=0.1, block=16):
    return standin.drafter_at_block(accept, cost, growth, block)


def draws(tokens, accept, block=16, count=20000, seed=42):
    rng = random.Random(seed)
    return [standin.verify_steps(tokens, accept, block, rng) for _draw in range(count)]


# ---- block size ----

def test_block_16_keeps_todays_figures_exactly():
    assert drafter() == standin.DrafterModel(6.0, 1.3, 0.1, 16)
    assert standin.simulated_drafter({"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16},
                                     None) == standin.DrafterModel(6.0, 1.3, 0.1, 16)
    assert standin.simulated_drafter({"speculative_algorithm": "DFLASH"}, None) == drafter()
    # Without noise the steps are today's: ceil(tokens / acceptance).
    assert standin.verify_steps(32, 6.4, 16) == 5 and standin.verify_steps(64, 2.6, 4) == 25
    assert standin.verify_steps(128, 6.0, 16) == 22 and standin.verify_steps(64, 1.6, 16) == 40
    assert standin.expected_speed(drafter(), 1) == 6.0 / 1.3
    assert standin.expected_speed(drafter(), 4) == 6.0 / (1.3 * 1.3)


def test_a_smaller_block_lowers_and_caps_the_acceptance_and_costs_less():
    b8 = drafter(block=8)
    assert b8.accept_length == pytest.approx(6.0 * (1 - 0.8 ** 8) / (1 - 0.8 ** 16)) == pytest.approx(5.138, abs=1e-3)
    assert b8.step_cost == pytest.approx(1.15) and b8.load_growth == pytest.approx(0.05)
    assert drafter(block=2).accept_length == 2.0  # at most the block
    assert drafter(accept=20.0).accept_length == 16.0
    assert drafter(accept=1.0, block=4).accept_length == 1.0  # at least 1
    assert drafter(block=32).accept_length > 6.0 and drafter(block=32).load_growth == pytest.approx(0.2)


@pytest.mark.parametrize("accept", [6.0, 6.4])
def test_block_16_is_a_little_faster_alone_and_block_8_clearly_faster_at_the_labs_load(accept):
    b16, b8 = drafter(accept), drafter(accept, block=8)
    alone = standin.expected_speed(b8, 1) / standin.expected_speed(b16, 1)
    loaded = standin.expected_speed(b8, LAB_LOAD) / standin.expected_speed(b16, LAB_LOAD)
    assert 0.95 < alone < 1.0 and alone == pytest.approx(0.968, abs=1e-3)
    assert loaded >= 1.08 and loaded == pytest.approx(1.094, abs=1e-3)
    assert standin.expected_speed(b8, 2) > standin.expected_speed(b16, 2)  # the crossing: between 1 and 2


def test_the_block_comes_from_the_flag_else_the_drafters_config(tmp_path):
    (tmp_path / "config.json").write_text('{"dflash_config": {"block_size": 8}}')
    assert standin.drafter_block_size({}, str(tmp_path)) == 8
    assert standin.drafter_block_size({"speculative_dflash_block_size": "16"}, str(tmp_path)) == 16
    (tmp_path / "config.json").write_text('{"architectures": ["DFlashDraftModel"] "block_size": 16}')
    assert standin.drafter_block_size({}, str(tmp_path)) == 16
    assert standin.simulated_drafter({"speculative_algorithm": "DDTREE"}, str(tmp_path)).block_size == 16


def test_nextn_has_no_block_model_and_is_capped_by_its_draft_tokens():
    nextn = standin.simulated_drafter({"speculative_algorithm": "NEXTN", "speculative_num_draft_tokens": 4}, None)
    assert nextn == standin.DrafterModel(2.6, 1.3, 0.1, 4)
    assert standin.simulated_drafter({"speculative_algorithm": None}, None) is None


# ---- drafter figures from marker files, and the lab's drafters ----

def test_a_step_cost_of_13_9_is_exactly_10_percent_slower_at_every_load(tmp_path):
    (tmp_path / "GPUFLEET_STANDIN_STEP_COST").write_text("13/9\n")
    (tmp_path / "GPUFLEET_STANDIN_ACCEPT_LENGTH").write_text("6.4\n")
    slow = standin.simulated_drafter({"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16},
                                     str(tmp_path))
    assert slow.step_cost == pytest.approx(1.3 / 0.9, abs=1e-15)
    for running in range(1, 65):
        ratio = standin.expected_speed(slow, running) / standin.expected_speed(drafter(6.4), running)
        assert ratio == pytest.approx(0.9, abs=1e-12), running
    # and at another block too (the block scales both costs alike)
    slow8 = standin.drafter_at_block(6.4, slow.step_cost, 0.1, 8)
    assert standin.expected_speed(slow8, 4) / standin.expected_speed(drafter(6.4, block=8), 4) == pytest.approx(0.9)


def lab_markers():
    """{(drafter directory, marker): content} of the lab's provisioning, and {directory: block size}: the model files it
    writes (gpufleet_lab__model_files, their templates rendered as Ansible would) and the markers its tasks copy."""
    play = yaml.safe_load((TESTS / "containers" / "provision.yml").read_text())[0]
    markers, blocks = {}, {}
    for entry in play["vars"]["gpufleet_lab__model_files"]:
        directory, name = entry["path"].split("/")[2:4]
        content = jinja2.Environment(keep_trailing_newline=True).from_string(entry["content"]).render(play["vars"])
        if name == "GPUFLEET_STANDIN_ACCEPT_LENGTH":
            markers[(directory, name)] = float(content)
        elif name.startswith("GPUFLEET_STANDIN_"):
            markers[(directory, name)] = content.strip()
        elif name == "config.json" and "DFlashDraftModel" in content and "dflash_config" in content:
            blocks[directory] = json.loads(content)["dflash_config"]["block_size"]
    for task in play["tasks"]:
        copy = task.get("ansible.builtin.copy") or {}
        dest = str(copy.get("dest") or "")
        if dest.startswith("/models/") and "GPUFLEET_STANDIN_" in dest:
            directory, name = dest.split("/")[2:4]
            markers[(directory, name)] = str(copy["content"]).strip()
    return markers, blocks


def lab_drafter(markers, blocks, directory):
    accept = markers[(directory, "GPUFLEET_STANDIN_ACCEPT_LENGTH")]
    cost = markers.get((directory, "GPUFLEET_STANDIN_STEP_COST"))
    cost = float(standin.fractions.Fraction(cost)) if cost else 1.3
    growth = float(markers.get((directory, "GPUFLEET_STANDIN_LOAD_GROWTH")) or 0.1)
    return standin.drafter_at_block(accept, cost, growth, blocks[directory])


def test_the_labs_drafters_keep_their_documented_ratios():
    markers, blocks = lab_markers()
    zlab = lab_drafter(markers, blocks, "Qwen3.6-27B-DFlash")
    step4000 = lab_drafter(markers, blocks, "Qwen3.6-27B-DFlash-step4000")
    assert step4000.accept_length / zlab.accept_length == pytest.approx(0.65)  # 7.28 / 11.26 = 0.647
    assert step4000.accept_length / zlab.accept_length == pytest.approx(7.28 / 11.26, abs=0.005)
    slow10 = lab_drafter(markers, blocks, "Qwen3.6-27B-DFlash-slow10")
    for running in (1, 2, 4, 8, 32):
        assert standin.expected_speed(slow10, running) / standin.expected_speed(zlab, running) == pytest.approx(0.9)
    b8 = lab_drafter(markers, blocks, "Qwen3.6-27B-DFlash-b8")
    assert blocks["Qwen3.6-27B-DFlash-b8"] == 8 and b8.accept_length == pytest.approx(5.48, abs=0.01)
    assert standin.expected_speed(b8, 1) < standin.expected_speed(zlab, 1)
    assert standin.expected_speed(b8, LAB_LOAD) >= 1.08 * standin.expected_speed(zlab, LAB_LOAD)
    assert int(markers[("Qwen3.6-27B-DFlash-stops", "GPUFLEET_STANDIN_SPEC_STOPS_AFTER")]) == 50
    # The figures the existing scenarios assert (noise off) are unchanged.
    assert markers[("Qwen3.6-27B-DFlash", "GPUFLEET_STANDIN_ACCEPT_LENGTH")] == 6.4
    assert markers[("Qwen3.6-27B-DFlash-mismatch", "GPUFLEET_STANDIN_ACCEPT_LENGTH")] == 1.6
    assert markers[("Qwen3.6-27B-DFlash-loadbound", "GPUFLEET_STANDIN_LOAD_GROWTH")] == "1.5"
    loadbound = lab_drafter(markers, blocks, "Qwen3.6-27B-DFlash-loadbound")
    assert standin.expected_speed(loadbound, 1) == pytest.approx(4.0)
    # The canary's case (test (b)): past the probe's 1.2 alone, slower than no drafter from 2 running requests on,
    # so under round-robin it cannot settle at one request at a time (the baselines' load, about 4, would need
    # 4.5x there), as loadbound can.
    heavy = lab_drafter(markers, blocks, "Qwen3.6-27B-DFlash-heavy")
    assert standin.expected_speed(heavy, 1) == pytest.approx(1.5)
    for running in (2, 4, 8):
        assert standin.expected_speed(heavy, running) < standin.expected_speed(None, running)


# ---- noise ----

@pytest.mark.parametrize("tokens,accept,block", [(400, 6.0, 16), (400, 6.4, 16), (128, 6.0, 16), (400, 5.138, 8)])
def test_acceptance_draws_keep_the_mean_and_spread_about_15_percent(tokens, accept, block):
    steps = draws(tokens, accept, block)
    nominal = standin.verify_steps(tokens, accept, block)
    assert statistics.mean(steps) == pytest.approx(nominal, rel=0.005)
    # What SGLang reports (tokens over verify steps, summed over requests) stays the deterministic figure.
    assert tokens * len(steps) / float(sum(steps)) == pytest.approx(tokens / float(nominal), rel=0.01)
    lengths = [tokens / float(s) for s in steps]
    assert 0.10 <= statistics.pstdev(lengths) / statistics.mean(lengths) <= 0.20
    assert all(1.0 <= x <= block for x in lengths)


def test_short_requests_keep_their_mean_steps_and_the_block_caps_the_draws():
    steps = draws(32, 6.4)
    assert statistics.mean(steps) == pytest.approx(5.0, abs=0.03)
    lengths = [32 / float(s) for s in steps]
    assert 0.10 <= statistics.pstdev(lengths) / statistics.mean(lengths) <= 0.20
    assert min(steps) >= 2 and all(8 * s >= 64 for s in draws(64, 7.9, block=8))  # never above the block
    assert set(draws(64, 1.0, count=100)) == {64}  # acceptance 1: one token per step, no draw below it


def test_step_jitter_is_about_3_percent_bounded_and_centred():
    rng = random.Random(7)
    factors = [standin.step_jitter(rng) for _draw in range(20000)]
    assert min(factors) >= 1 - standin.STEP_JITTER_HALF_WIDTH and max(factors) <= 1 + standin.STEP_JITTER_HALF_WIDTH
    assert abs(standin.STEP_JITTER_HALF_WIDTH - 0.052) < 1e-3
    assert statistics.mean(factors) == pytest.approx(1.0, abs=0.001)
    assert statistics.pstdev(factors) == pytest.approx(0.03, abs=0.001)
    assert standin.step_jitter(None) == 1.0


def test_seeds_differ_by_host_and_port_and_a_host_draws_the_same_sequence_again():
    seed = standin.noise_seed(None, "canary-1", 30000)
    assert seed == standin.noise_seed("", "canary-1", 30000)
    assert len({seed, standin.noise_seed(None, "canary-2", 30000), standin.noise_seed(None, "canary-1", 30002)}) == 3
    assert standin.noise_seed("1234", "canary-1", 30000) == 1234
    assert standin.noise_seed("run-a", "x", 1) == standin.noise_seed("run-a", "y", 2)
    assert standin.noise_seed("run-a", "x", 1) != standin.noise_seed("run-b", "x", 1)
    rng_a, rng_b = random.Random(seed), random.Random(seed)
    assert [standin.verify_steps(400, 6.0, 16, rng_a) for _draw in range(50)] == \
        [standin.verify_steps(400, 6.0, 16, rng_b) for _draw in range(50)]


@pytest.mark.parametrize("environment,marker,on", [
    (None, None, True), ("0", None, False), ("off", None, False), (None, "0\n", False), ("1", "0\n", True),
    ("", "0", False), (None, "1", True)])
def test_the_noise_is_on_unless_the_environment_or_the_models_file_says_0(environment, marker, on):
    assert standin.noise_on(environment, marker) is on


# ---- speculation that stops ----

def plans(speculation, count, tokens=64):
    return [speculation.plan(tokens, speculation.drafter.accept_length) for _draw in range(count)]


def test_speculation_stops_by_itself_after_n_completed_requests():
    speculation = standin.Speculation(drafter(6.4), stops_after=3)
    for _request in range(3):
        assert speculation.accepting() and speculation.plan(64, 6.4).verify_steps == 10
        speculation.request_completed()
    lost = speculation.plan(64, 6.4)
    assert not speculation.accepting() and lost == standin.RequestPlan(64, 64, 1.3, 0.1)
    # Still verify steps, one token each, at the speculative step's cost: 1.3x the time of no drafter.
    assert standin.steps_of(lost) * standin.step_factor(1, lost.step_cost, lost.load_growth) == pytest.approx(64 * 1.3)
    assert standin.spec_meta(64, lost.verify_steps, 16, NEW) == {
        "spec_accept_rate": 0.0, "spec_accept_length": 1.0, "spec_num_correct_drafts": 0,
        "spec_num_proposed_drafts": 64 * 15, "spec_verify_ct": 64}


@pytest.mark.parametrize("release,resume,lost", [
    (None, None, True), (["weights"], ["weights"], True), ([], ["weights", "kv_cache"], True),
    (["kv_cache"], None, False), (["weights"], ["kv_cache"], False), (None, "no release", False)])
def test_release_then_resume_of_the_weights_loses_the_draft(release, resume, lost):
    speculation = standin.Speculation(drafter(6.4))
    if resume == "no release":
        speculation.resume_memory(None)
    else:
        speculation.release_memory(release)
        assert speculation.accepting()  # lost on the resume, not before
        speculation.resume_memory(resume)
    assert speculation.accepting() is not lost
    assert all(p.verify_steps == (64 if lost else 10) for p in plans(speculation, 3))


def test_a_later_resume_of_the_weights_still_loses_the_draft():
    speculation = standin.Speculation(drafter(6.4))
    speculation.release_memory(["weights"])
    speculation.resume_memory(["kv_cache"])
    speculation.resume_memory(["weights"])
    assert not speculation.accepting()


def test_the_decode_side_of_pd_runs_no_verify_step_and_reports_none():
    speculation = standin.Speculation(drafter(6.4), decode_only=True)
    plan = speculation.plan(64, 6.4, random.Random(1))
    assert plan == standin.RequestPlan(64, 0, None, None) and standin.steps_of(plan) == 64
    assert standin.step_factor(4, plan.step_cost, plan.load_growth) == standin.step_factor(4)  # plain speed
    assert speculation.drafter is not None  # still a speculative server: /server_info says DFLASH
    assert standin.spec_meta(64, 0, 16, NEW) == {} and standin.spec_meta(64, 0, 16, (0, 5, 16)) == {}
    assert standin.spec_meta(64, 0, 16, (0, 5, 6)) == {"spec_accept_rate": 0.0, "spec_accept_length": 0,
                                                       "spec_verify_ct": 0}


def test_meta_info_figures_agree_with_the_drawn_steps():
    assert standin.spec_meta(64, 10, 16, NEW) == {
        "spec_accept_rate": 54 / 150.0, "spec_accept_length": 6.4, "spec_num_correct_drafts": 54,
        "spec_num_proposed_drafts": 150, "spec_verify_ct": 10}
    old = standin.spec_meta(64, 10, 16, (0, 5, 6))
    assert old["spec_accept_length"] == 6.4 and old["spec_verify_ct"] == 10
    assert old["spec_accept_token_num"] == 54 and old["spec_draft_token_num"] == 150
    rng = random.Random(3)
    speculation = standin.Speculation(drafter(6.4))
    plan = speculation.plan(400, 6.4, rng)
    assert standin.spec_meta(400, plan.verify_steps, 16, NEW)["spec_accept_length"] == 400.0 / plan.verify_steps


@pytest.mark.parametrize("degenerate", [False, True])
def test_a_streams_steps_send_the_whole_answer_once_in_order(monkeypatch, degenerate):
    """A chat stream's deltas add up to the answer, a streamed /generate's last text is the whole answer, and each
    step builds only its new words (a 6000-token stream built the whole answer at every step: 6 s of CPU)."""
    monkeypatch.setattr(standin.State, "degenerate", degenerate)
    prompt, tokens = "The lab's load generator says hello.", 300
    whole = standin.answer(prompt, tokens)
    assert len(whole.split()) == tokens
    cuts = [0, 1, 7, 8, 150, 299, 300]
    assert "".join(standin.answer(prompt, end, start) for start, end in zip(cuts, cuts[1:])) == whole
    assert standin.answer(prompt, 50, 50) == ""
    built = []
    monkeypatch.setattr(standin, "decode", lambda plan, prompt="", streaming=False: iter(cuts[1:]))
    real_answer = standin.answer
    monkeypatch.setattr(standin, "answer", lambda p, t, start=0: built.append(t - start) or real_answer(p, t, start))
    events = list(standin.generate_stream({"text": prompt, "sampling_params": {"max_new_tokens": tokens}}))
    assert events[-1]["text"] == whole and events[-1]["output_ids"] == list(range(tokens))
    assert sum(built) == tokens


def test_a_command_line_the_releases_parser_accepted_is_not_parsed_again(monkeypatch, tmp_path):
    """The stand-in keeps the settings SGLang's parser gave for a command line; a new command line, and one with a
    flag the release does not have, go to the parser (which exits 2 on the latter, and nothing is kept)."""
    import argparse

    calls = []

    def release_parser(from_source=False):
        calls.append(from_source)
        parser = argparse.ArgumentParser(prog="sglang serve")
        parser.add_argument("--model-path")
        parser.add_argument("--port", type=int, default=30000)
        return parser, "sglang"

    monkeypatch.setattr(standin, "sglang_parser", release_parser)
    monkeypatch.setattr(standin, "PARSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(standin, "parse_cache_path",
                        lambda argv: str(tmp_path / ("%s.json" % abs(hash(tuple(argv))))))
    argv = ["--model-path", "/models/m", "--port", "30001"]
    assert standin.parsed_settings(argv) == ({"model_path": "/models/m", "port": 30001}, "sglang", False)
    assert standin.parsed_settings(argv) == ({"model_path": "/models/m", "port": 30001}, "sglang", True)
    assert len(calls) == 1
    assert standin.parsed_settings(argv[:2])[2] is False and len(calls) == 2
    with pytest.raises(SystemExit) as exited:
        standin.parsed_settings(argv + ["--no-such-flag"])
    assert exited.value.code == 2 and len(calls) == 3
    with pytest.raises(SystemExit):
        standin.parsed_settings(argv + ["--no-such-flag"])
    assert len(calls) == 4  # a refused command line is never kept


def test_release_numbers():
    assert standin.release_tuple("0.5.23") == (0, 5, 23) and standin.release_tuple("0.5.6") < (0, 5, 11)
    assert standin.release_tuple("0.9.0.dev0+ddtree") == (0, 9, 0) and standin.release_tuple("0.5.6rc1") == (0, 5, 6)


def test_the_model_directory_can_ask_for_the_parser_from_the_source(tmp_path):
    assert standin.wants_source_parser(["--model-path", str(tmp_path), "--port", "1"]) is False
    (tmp_path / "GPUFLEET_STANDIN_PARSER").write_text("source\n")
    assert standin.wants_source_parser(["--port", "1", "--model-path", str(tmp_path)]) is True
    assert standin.wants_source_parser(["--model-path=%s" % tmp_path]) is True
    (tmp_path / "GPUFLEET_STANDIN_PARSER").write_text("sglang\n")
    assert standin.wants_source_parser(["--model-path", str(tmp_path)]) is False
    assert standin.wants_source_parser(["--model-path"]) is False
