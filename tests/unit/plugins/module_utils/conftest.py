"""Fixtures of the module_utils tests: messy trees for source_search, the real releases' parser sources."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tarfile
from pathlib import Path

import pytest

SGLANG_FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "sglang"


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
