#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: python_package_info
short_description: Find where a Python package really comes from in a given interpreter
version_added: "0.1.0"
description:
  - Runs the given Python interpreter on the target with a small stdlib-only probe and reports
    where the package is imported from, its version, and how it was installed
    (regular, path, editable, namespace or missing).
  - The package is resolved with C(importlib.util.find_spec) and C(importlib.metadata); it is
    never imported, so resolving C(sglang) does not import C(torch) or touch a GPU.
  - Editable installs are recognised the modern ways (PEP 660 C(__editable__) finders and
    C(.pth) files, C(direct_url.json) with C(dir_info.editable)) and the legacy ways
    (C(.egg-link), plain path entries such as C(PYTHONPATH) checkouts).
  - A directory that pip installed into outside the site directories (C(pip install --target DIR),
    C(--prefix), another interpreter's C(--user)) and that is put on the path is not a checkout;
    its dist-info lists the package's files in C(RECORD), and it is reported as RV(install=path).
  - A dist-info whose C(METADATA) is missing, undecodable or without C(Name)/C(Version) is a broken
    install; the module fails and names the file and the problem.
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
      - Seconds to wait for the interpreter before killing it and failing; more than 0.
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
requirements:
  - Python 3.8 or newer on the target, standard library only.
  - O(python) (the interpreter inspected) must be Python 3.8 or newer too.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
notes:
  - The target interpreter must be Python 3.8 or newer (C(importlib.metadata)).
seealso:
  - module: gpufleet.sglang.source_search_info
  - module: gpufleet.sglang.cli_flags_info
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
  description:
    - How the package is installed.
    - C(regular) is pip's copy in a site directory of the interpreter (site-packages, the user site).
    - C(path) is pip's copy in another directory that is on the path (C(PYTHONPATH), a C(.pth) entry),
      such as C(pip install --target DIR) or C(--prefix DIR); the code is what pip installed, not a checkout.
    - C(editable) is code that runs from a source checkout (PEP 660 or C(.egg-link) editable installs,
      a checkout on the path with no dist-info that lists its files).
  returned: always
  type: str
  choices: [regular, path, editable, namespace, missing]
installed_by:
  description:
    - The installer recorded in the dist-info's C(INSTALLER) file (such as C(pip) or C(uv)), when that
      dist-info's C(RECORD) lists the package's files (RV(install=regular) and RV(install=path));
      null otherwise, for example for checkouts and editable installs.
  returned: always
  type: str
  sample: pip
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
    - Feed these to M(gpufleet.sglang.source_search_info).
  returned: always
  type: list
  elements: str
probe_errors:
  description:
    - Steps of the probe that failed without stopping it, step name to error (for example an unreadable
      C(RECORD) or C(version.py)); empty when every step worked.
  returned: always
  type: dict
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

import socket
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import (
    PackageInfoError,
    resolve_package,
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
    try:
        result = resolve_package(python, name, module.params["environment"], module.params["timeout"])
    except PackageInfoError as exc:
        extra = {"stderr": exc.stderr} if exc.stderr is not None else {}
        module.fail_json(msg="host %s: %s" % (host, exc), **extra)
    if result["install"] == "missing" and module.params["fail_on_missing"]:
        module.fail_json(msg="host %s: %s is not installed for %s (sys.prefix %s); install it there or set "
                             "'python' to the interpreter that has it" % (host, name, python, result["sys_prefix"]),
                         **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
