#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

DOCUMENTATION = r"""
---
module: python_package_info
short_description: Find where a Python package really comes from in a given interpreter
version_added: "0.1.0"
description:
  - Runs the given Python interpreter on the target with a small stdlib-only probe and reports
    where the package is imported from, its version, and how it was installed
    (regular, editable, namespace or missing).
  - The package is resolved with C(importlib.util.find_spec) and C(importlib.metadata); it is
    never imported, so resolving C(sglang) does not import C(torch) or touch a GPU.
  - Editable installs are recognised the modern ways (PEP 660 C(__editable__) finders and
    C(.pth) files, C(direct_url.json) with C(dir_info.editable)) and the legacy ways
    (C(.egg-link), plain path entries such as C(PYTHONPATH) checkouts).
  - Use O(python) with the interpreter from the service's C(ExecStart), not the system one.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  python:
    description:
      - Path of the Python interpreter on the target whose view of the package is wanted.
      - Defaults to the interpreter Ansible runs this module with.
    type: path
  name:
    description:
      - Import name of the package (top-level).
    type: str
    default: sglang
  timeout:
    description:
      - Seconds to wait for the interpreter before killing it and failing.
    type: int
    default: 30
  environment:
    description:
      - Extra environment variables for the interpreter, for example the C(PYTHONPATH) the service sets.
    type: dict
    default: {}
  fail_on_missing:
    description:
      - Fail when the package is not installed in that interpreter, instead of returning RV(install=missing).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
notes:
  - The target interpreter must be Python 3.8 or newer (C(importlib.metadata)).
seealso:
  - module: gpufleet.sglang.source_search
  - module: gpufleet.sglang.cli_flags
"""

EXAMPLES = r"""
- name: Where does the service's Python import sglang from?
  gpufleet.sglang.python_package_info:
    python: /opt/ml-env/bin/python3
  register: sglang_pkg

- name: Show the code that really runs
  ansible.builtin.debug:
    msg: "sglang {{ sglang_pkg.version }} ({{ sglang_pkg.install }}) from {{ sglang_pkg.search_roots }}"

- name: A checkout put on the path by the unit's environment
  gpufleet.sglang.python_package_info:
    python: /opt/ml-env/bin/python3
    environment:
      PYTHONPATH: /srv/src/sglang/python
    fail_on_missing: true
"""

RETURN = r"""
name:
  description: The import name that was resolved.
  returned: always
  type: str
  sample: sglang
python:
  description: The interpreter's C(sys.executable).
  returned: always
  type: str
  sample: /opt/ml-env/bin/python3
python_version:
  description: Version of the interpreter.
  returned: always
  type: str
  sample: 3.11.7
file:
  description: The package's C(__file__) as the import system would set it; null for namespace packages.
  returned: always
  type: str
  sample: /opt/ml-env/lib/python3.11/site-packages/sglang/__init__.py
location:
  description: The package directory.
  returned: always
  type: str
  sample: /opt/ml-env/lib/python3.11/site-packages/sglang
version:
  description: Version from the distribution metadata, or from the package's C(version.py) when there is none.
  returned: always
  type: str
  sample: 0.5.23
version_source:
  description: Where RV(version) came from, C(metadata) or C(version.py).
  returned: always
  type: str
install:
  description: How the package is installed.
  returned: always
  type: str
  choices: [regular, editable, namespace, missing]
editable_source:
  description: The checkout an editable install points to; null otherwise.
  returned: always
  type: str
  sample: /srv/src/sglang/python
editable_method:
  description:
    - What revealed the editable install.
    - One of C(direct_url.json), C(egg-link), C(__editable__ finder), C(path entry); null when not editable.
  returned: always
  type: str
dist_info:
  description: Path of the distribution's metadata directory (C(.dist-info) or C(.egg-info)).
  returned: always
  type: str
  sample: /opt/ml-env/lib/python3.11/site-packages/sglang-0.5.23.dist-info
distribution:
  description: Name of the distribution that provides the package.
  returned: always
  type: str
sys_prefix:
  description: The interpreter's C(sys.prefix).
  returned: always
  type: str
in_venv:
  description: Whether the interpreter runs inside a virtual environment.
  returned: always
  type: bool
search_roots:
  description:
    - Real paths, deduplicated, of the directories that hold the code that runs
      (the checkout's package directory for an editable install, site-packages/NAME otherwise).
    - Feed these to M(gpufleet.sglang.source_search).
  returned: always
  type: list
  elements: str
method:
  description: How the package was resolved; it is never imported.
  returned: always
  type: str
  sample: importlib.util.find_spec+importlib.metadata
elapsed_s:
  description: Seconds the probe took.
  returned: always
  type: float
"""

import os
import socket
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import (
    PROBE_SOURCE,
    BrokenInstall,
    ProbeError,
    classify,
    parse_probe_output,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="path"),
            name=dict(type="str", default="sglang"),
            timeout=dict(type="int", default=30),
            environment=dict(type="dict", default={}),
            fail_on_missing=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    host = socket.gethostname()
    python = module.params["python"] or sys.executable
    name = module.params["name"]

    if not os.path.exists(python):
        module.fail_json(msg="host %s: interpreter %s does not exist; set 'python' to the interpreter the "
                             "service runs (see ExecStart in its unit)" % (host, python))
    if os.path.isdir(python) or not os.access(python, os.X_OK):
        module.fail_json(msg="host %s: interpreter %s is not an executable file; point 'python' at "
                             "bin/python3 of the environment" % (host, python))
    if not name or "." in name or not name.replace("_", "a").isalnum():
        module.fail_json(msg="host %s: name %r is not a top-level import name such as 'sglang'" % (host, name))

    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in module.params["environment"].items()})
    run = run_argv([python, "-c", PROBE_SOURCE, name], timeout=module.params["timeout"], env=env)
    if run.error:
        module.fail_json(msg="host %s: cannot run %s: %s" % (host, python, run.error))
    if run.timed_out:
        module.fail_json(msg="host %s: %s did not answer within %ss (killed); check for a hung import or "
                             "raise 'timeout'" % (host, python, module.params["timeout"]))
    try:
        raw = parse_probe_output(run.stdout)
    except ProbeError as exc:
        module.fail_json(
            msg="host %s: %s did not run the probe as a Python >= 3.8 would (%s, rc=%s); is it a Python "
                "interpreter?" % (host, python, exc, run.rc),
            stderr=run.stderr_tail(),
        )
    try:
        result = classify(raw, name)
    except BrokenInstall as exc:
        module.fail_json(msg="host %s, interpreter %s: broken install of %s: %s" % (host, python, name, exc))

    if result["install"] == "missing" and module.params["fail_on_missing"]:
        module.fail_json(msg="host %s: %s is not installed for %s (sys.prefix %s); install it there or set "
                             "'python' to the interpreter that has it" % (host, name, python, raw.get("prefix")),
                         **result)
    result["elapsed_s"] = round(run.elapsed_s, 3)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
