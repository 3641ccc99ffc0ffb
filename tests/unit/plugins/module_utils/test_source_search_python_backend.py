"""source_search's Python backend streams the tree: memory does not grow with the number of files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import sys

from helpers import collections_root


def test_memory_stays_bounded_on_100k_files(tmp_path):
    """Stream the tree: peak memory must not grow with the number of files (measured in a child)."""
    root = tmp_path / "many"
    for d in range(100):
        sub = root / ("d%03d" % d)
        sub.mkdir(parents=True)
        for f in range(1000):
            (sub / ("m%04d.py" % f)).write_bytes(b"x = 1\n" if f % 500 else b"DFLASH = 1\n")
    code = (
        "import resource, sys; sys.path.insert(0, %r)\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import LineMatcher\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.search import search\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import FileFilter\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "r = search([%r], LineMatcher(['DFLASH'], []), FileFilter(['*.py'], []), max_files=0)\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(r['files_scanned'], r['files_with_hits'], peak - base)\n"
    ) % (str(collections_root()), str(root))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    scanned, with_hits, grown_kib = int(out[0]), int(out[1]), int(out[2])
    assert (scanned, with_hits) == (100000, 200)
    # Only directories (100) are remembered. Keeping the 100k paths would cost about 11 MiB here.
    assert grown_kib < 3 * 1024, "memory grew by %d KiB over 100k files" % grown_kib
