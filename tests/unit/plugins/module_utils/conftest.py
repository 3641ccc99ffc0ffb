"""Fixtures of the module_utils tests: messy trees for source_search, the real releases' parser sources."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
SGLANG_FIXTURES = REPO / "tests" / "fixtures" / "sglang"


def pytest_collection_modifyitems(config, items):
    """With GPUFLEET_TESTS_CORE_DEPENDENT_ONLY=1 (scripts/test.sh versions: the unit tests under each other
    ansible-core the collection claims), only the tests of this folder whose code reaches ansible-core run. The others
    test target code that imports nothing of it: under another ansible-core they run the same code on the same
    interpreter as pytest's run of them, so they are deselected, not run again."""
    if os.environ.get("GPUFLEET_TESTS_CORE_DEPENDENT_ONLY") != "1":
        return
    here = str(Path(__file__).parent)
    kept, deselected, verdicts = [], [], {}
    for item in items:
        path = str(item.fspath)
        if path.startswith(here) and path not in verdicts:
            verdicts[path] = _reaches_ansible_core(path, set())
        (kept if verdicts.get(path, True) else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _imports(path):
    """The modules a Python file imports (absolute imports; `from package import name` also as package.name)."""
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(node.module + "." + alias.name for alias in node.names)
    return names


def _reaches_ansible_core(path, seen):
    """Whether the file, or a module of this repository it imports (the installed collection, the test helpers),
    imports ansible (ansible-core), directly or through others."""
    for name in _imports(path):
        if name == "ansible" or name.startswith("ansible."):
            return True
        source = getattr(sys.modules.get(name), "__file__", None)
        if source and source.startswith(str(REPO)) and source.endswith(".py") and source not in seen:
            seen.add(source)
            if _reaches_ansible_core(source, seen):
                return True
    return False


@pytest.fixture
def messy_tree(tmp_path):
    """A tree with every kind of trouble a real host has."""
    root = tmp_path / "src"
    (root / "pkg" / "speculative").mkdir(parents=True)
    (root / "pkg" / "speculative" / "dflash_worker.py").write_text(
        "class DFlashWorker:\n    def is_dflash_family(self):\n        return 'DFLASH'\n")
    (root / "pkg" / "build.py").write_text("FLAGS = ['-DFLASHINFER_ENABLE_F16', '-DFLASHINFER_X']\n")
    (root / "pkg" / "crlf.py").write_bytes(b"a = 1\r\nalgo = 'DFLASH'\r\nb = 2\r\n")
    (root / "pkg" / "latin1.py").write_bytes(b"# caf\xe9\nX = 'DFLASH'  # \xff\xfe\n")
    (root / "pkg" / "blob.py").write_bytes(b"DFLASH\x00\x01\x02 binary")
    (root / "pkg" / "huge.py").write_text("DFLASH\n" * 200000)
    (root / "tests").mkdir()
    (root / "tests" / "test_dflash.py").write_text("DFLASH\n")
    (root / "pkg" / "notes.txt").write_text("DFLASH in prose\n")
    (root / "pkg" / "noterm.py").write_text("x = 1\n" * 10)
    os.symlink(root / "pkg", root / "pkg" / "speculative" / "loop")  # a symlink loop
    os.symlink(root / "pkg" / "crlf.py", root / "pkg" / "zz_link_to_crlf.py")  # one file, two paths
    os.symlink(root / "gone", root / "pkg" / "dangling.py")
    return root


@pytest.fixture(scope="session")
def release_sources(tmp_path_factory):
    """{release: the sglang package directory} of each real release's parser sources (tests/fixtures/sglang)."""
    root = tmp_path_factory.mktemp("sglang-sources")
    out = {}
    for archive in sorted(SGLANG_FIXTURES.glob("*/parser-sources.tar.xz")):
        version = archive.parent.name
        with tarfile.open(archive) as tar:
            tar.extractall(root / version)
        out[version] = root / version / "sglang"
    return out
