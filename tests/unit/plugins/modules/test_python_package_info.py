"""python_package_info's main(): the probe's arguments (the controller-side default interpreter included), the
result as resolve_package gives it, fail_on_missing, and the probe's failures with its stderr. resolve_package, which
starts the interpreter, is mocked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
from unittest import mock

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import PackageInfoError
from ansible_collections.gpufleet.sglang.plugins.modules import python_package_info

from .module_runner import Calls, always_returned, host_msg, run_module

PYTHON = "/opt/ml-env/bin/python3"
SITE = "/opt/ml-env/lib/python3.11/site-packages"


def package(install="regular"):
    """resolve_package's answer for a pip-installed sglang 0.5.23 (or a missing one)."""
    found = install != "missing"
    return {"name": "sglang", "python": PYTHON, "python_version": "3.11.7",
            "file": SITE + "/sglang/__init__.py" if found else None, "location": SITE + "/sglang" if found else None,
            "version": "0.5.23" if found else None, "version_source": "dist-info" if found else None,
            "install": install, "installed_by": "pip" if found else None, "editable_source": None,
            "editable_method": None, "dist_info": SITE + "/sglang-0.5.23.dist-info" if found else None,
            "distribution": "sglang" if found else None, "sys_prefix": "/opt/ml-env", "in_venv": True,
            "search_roots": [SITE + "/sglang"] if found else [], "probe_errors": {}, "method": "probe",
            "elapsed_s": 0.05}


@pytest.fixture
def probe(monkeypatch):
    """resolve_package mocked: the calls are its arguments; it returns reply(), a Mock (its return_value, or its
    side_effect raised)."""
    calls = Calls()
    calls.reply = mock.Mock(return_value=package())

    def mocked(python, name, environment, timeout):
        calls.append((python, name, environment, timeout))
        return calls.reply()

    monkeypatch.setattr(python_package_info, "resolve_package", mocked)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_probe_gets_the_options_and_its_answer_is_the_result(probe, check_mode):
    done = run_module(python_package_info, {"python": PYTHON, "environment": {"PYTHONPATH": "/srv/src"},
                                            "timeout": 9}, check_mode=check_mode)
    assert not done.failed
    assert probe == [(PYTHON, "sglang", {"PYTHONPATH": "/srv/src"}, 9)]
    assert done.result == dict(package(), changed=False)
    assert set(always_returned(python_package_info)) <= set(done.result)


def test_by_default_the_interpreter_that_runs_the_module_and_sglang(probe):
    run_module(python_package_info, {})
    assert probe == [(sys.executable, "sglang", {}, 30)]
    run_module(python_package_info, {"name": "torch"})
    assert probe[-1][1] == "torch"


def test_a_missing_package_is_a_result_unless_fail_on_missing(probe):
    probe.reply.return_value = package("missing")
    done = run_module(python_package_info, {"python": PYTHON})
    assert not done.failed and done.result["install"] == "missing" and done.result["search_roots"] == []
    done = run_module(python_package_info, {"python": PYTHON, "fail_on_missing": True})
    assert done.failed
    assert done.msg == host_msg("sglang is not installed for %s (sys.prefix /opt/ml-env); install it there or set "
                                "'python' to the interpreter that has it" % PYTHON)
    # The probe's answer comes with the failure, for the operator to read.
    assert dict(done.result, msg=None) == dict(package("missing"), msg=None)


@pytest.mark.parametrize("error, extra", [
    (PackageInfoError("/opt/ml-env/bin/python3 did not answer within 30s (killed); check for a hung import or "
                      "raise 'timeout'"), {}),
    (PackageInfoError("/opt/ml-env/bin/python3 is not Python 3.8 or newer", stderr="SyntaxError: invalid syntax"),
     {"stderr": "SyntaxError: invalid syntax"}),
])
def test_a_probe_that_fails_fails_the_task_with_its_stderr(probe, error, extra):
    probe.reply.side_effect = error
    done = run_module(python_package_info, {"python": PYTHON})
    assert done.failed and done.result == dict(extra, msg=host_msg(str(error)))


@pytest.mark.parametrize("args, message", [
    ({"timeout": "a while"}, "timeout"),
    ({"fail_on_missing": "perhaps"}, "fail_on_missing"),
    ({"environment": ["PYTHONPATH=/srv"]}, "environment"),
    ({"package": "sglang"}, "Unsupported parameters"),
])
def test_bad_options_fail_before_the_probe(probe, args, message):
    done = run_module(python_package_info, args)
    assert done.failed and message in done.msg, done.msg
    assert probe == []
