"""sglang_speed_probe and sglang_wait_ready's generation check through ansible, against the lab's server
stand-in (tests/standin) running on a real SGLang 0.5.23 install. The stand-in's speed is SIMULATED
(see its docstring); what is tested is the measuring code, which is the same against a real server."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from helpers import sglang_venv

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def standin_dir(tmp_path_factory):
    """The stand-in and the collection's source flag reader under the names the lab gives them."""
    path = tmp_path_factory.mktemp("standin")
    shutil.copy(TESTS / "standin" / "gpufleet_standin.py", path / "gpufleet_standin.py")
    shutil.copy(ROOT / "plugins" / "module_utils" / "argparse_source.py", path / "gpufleet_argparse_source.py")
    return path


def start_server(standin_dir, tmp_path, algorithm=None, accept_length=None):
    model, draft = tmp_path / "model", tmp_path / "drafter"
    model.mkdir(parents=True)
    draft.mkdir()
    if accept_length is not None:
        (draft / "GPUFLEET_STANDIN_ACCEPT_LENGTH").write_text("%s\n" % accept_length)
    port = free_port()
    argv = [str(sglang_venv("0.5.23") / "bin" / "python"), "-m", "gpufleet_standin", "--model-path", str(model),
            "--host", "127.0.0.1", "--port", str(port)]
    if algorithm:
        argv += ["--speculative-algorithm", algorithm, "--speculative-draft-model-path", str(draft)]
    # The exact SIMULATED acceptance is asserted: the stand-in's noise is off.
    env = dict(os.environ, PYTHONPATH=str(standin_dir), GPUFLEET_STANDIN_STARTUP_S="0.2", GPUFLEET_STANDIN_NOISE="0")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return proc, port


@pytest.fixture
def server(standin_dir, tmp_path):
    procs = []

    def start(**kwargs):
        proc, port = start_server(standin_dir, tmp_path / str(len(procs)), **kwargs)
        procs.append(proc)
        return port

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def wait_health(port, timeout=60):
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("the stand-in did not come up on port %d" % port)


def test_acceptance_length_from_meta_info_and_speed_of_one_client(playbook, server):
    port = server(algorithm="DFLASH", accept_length=6.4)
    wait_health(port)
    r = playbook.module("gpufleet.sglang.sglang_speed_probe", {"port": port, "max_new_tokens": 32})
    assert not r.get("failed"), r.get("msg")
    assert r["measured"] and r["requests"] == 4 and r["output_tokens"] == 128
    # ceil(32 / 6.4) = 5 verify steps per request: 128 tokens / 20 steps, as SGLang computes it.
    assert r["accept_length"] == 6.4 and r["accept_length_source"] == "meta_info.spec_verify_ct"
    assert r["tokens_per_s"] > 0 and r["latency_s_median"] > 0


def test_a_server_without_speculative_decoding_has_no_acceptance_length(playbook, server):
    port = server()
    wait_health(port)
    r = playbook.module("gpufleet.sglang.sglang_speed_probe", {"port": port, "max_new_tokens": 8,
                                                               "prompts": ["one", "two"]})
    assert r["measured"] and r["requests"] == 2 and r["accept_length"] is None and r["accept_length_source"] is None


def test_nothing_listening_fails_naming_the_address(playbook):
    port = free_port()
    r = playbook.module("gpufleet.sglang.sglang_speed_probe", {"port": port, "warmup_requests": 0})
    assert r["failed"] and r["msg"].startswith("host ")
    assert "http://127.0.0.1:%d could not be measured" % port in r["msg"]
    assert "request 1 of 4: POST /generate answered nothing" in r["msg"]


def test_bad_options_are_refused_by_name(playbook):
    r = playbook.module("gpufleet.sglang.sglang_speed_probe", {"max_new_tokens": 0})
    assert r["failed"] and "max_new_tokens must be between 1 and 65536, not 0" in r["msg"]
