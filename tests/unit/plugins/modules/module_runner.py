"""A module's main() run in-process, the standard way of Ansible's own module unit tests (the tests here import it).

The arguments reach AnsibleModule through ansible.module_utils.testing.patch_module_args (ansible-core 2.19 and
newer), or through basic._ANSIBLE_ARGS on the older releases the collection supports; exit_json and fail_json raise
ModuleDone, which carries what the module returned. AnsibleModule itself is the real one: the argument spec's
validation (types, choices, required options) runs as on a host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import inspect
import json
import re
import socket
from pathlib import Path
from unittest import mock

import pytest
import yaml
from ansible.module_utils import basic

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core before 2.19

    @contextlib.contextmanager
    def patch_module_args(args=None):
        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}).encode()):
            yield


HOST = socket.gethostname()
REPO = Path(__file__).resolve().parents[4]


class ModuleDone(Exception):
    """exit_json (failed False) or fail_json (failed True) was called with result; warnings are the module's own
    module.warn() calls."""

    def __init__(self, failed, result, warnings):
        super(ModuleDone, self).__init__(result.get("msg"))
        self.failed = failed
        self.result = result
        self.warnings = warnings

    @property
    def msg(self):
        return self.result.get("msg")


class Calls(list):
    """The calls a mock saw, in order, with room for what the test sets on it (what the mock answers)."""


def run_module(module, args, check_mode=False):
    """ModuleDone of module.main() with args (a dict of the task's arguments), in check mode when asked."""
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    warnings = []

    def exit_json(self, **result):
        raise ModuleDone(False, result, warnings)

    def fail_json(self, msg=None, **result):
        result["msg"] = msg
        raise ModuleDone(True, result, warnings)

    def warn(self, warning):
        warnings.append(warning)

    patched = mock.patch.multiple(basic.AnsibleModule, exit_json=exit_json, fail_json=fail_json, warn=warn)
    with patch_module_args(args), patched, pytest.raises(ModuleDone) as done:
        module.main()
    return done.value


def documented(module, name):
    """The module's DOCUMENTATION, EXAMPLES or RETURN, read as YAML."""
    return yaml.safe_load(getattr(module, name))


def always_returned(module):
    """The keys RETURN says the module returns always."""
    return sorted(key for key, doc in documented(module, "RETURN").items() if doc.get("returned") == "always")


def argument_spec(module):
    """The argument_spec main() gives AnsibleModule (main() stops right there)."""
    seen = {}

    class Stop(Exception):
        pass

    def record(self, argument_spec, **kwargs):
        seen.update(argument_spec)
        raise Stop()

    with mock.patch.object(basic.AnsibleModule, "__init__", record), pytest.raises(Stop):
        module.main()
    return seen


def host_msg(text):
    """A module's failure message: the host's name first."""
    return "host %s: %s" % (HOST, text)


def spec_differences(module, spec):
    """How the options a module file documents differ from an argument spec (an action plugin's, for a module that is
    only the action's documentation): [(option, what, documented, in the spec)]."""
    options = documented(module, "DOCUMENTATION").get("options") or {}
    out = [(name, "undocumented", None, spec[name]) for name in sorted(set(spec) - set(options))]
    out += [(name, "not in the spec", options[name], None) for name in sorted(set(options) - set(spec))]
    for name in sorted(set(spec) & set(options)):
        for key, absent in (("type", None), ("elements", None), ("required", False), ("default", None),
                            ("choices", None)):
            doc, given = options[name].get(key, absent), spec[name].get(key, absent)
            if doc != given:
                out.append((name, key, doc, given))
    return out


def modules_named(plugin):
    """The modules a plugin's source names as "gpufleet.sglang.NAME" (an action runs them), each as the module file
    it lands on through meta/runtime.yml's redirects: {name: file name}."""
    routes = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text()).get("plugin_routing", {}).get("modules", {})
    out = {}
    for name in set(re.findall(r"[\"']gpufleet\.sglang\.([a-z_]+)[\"']", inspect.getsource(plugin))):
        target = routes.get(name, {}).get("redirect", "gpufleet.sglang." + name).split(".")[-1]
        out[name] = target + ".py"
    return out
