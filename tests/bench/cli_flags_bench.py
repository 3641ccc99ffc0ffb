"""Benchmark cli_flags_info's three ways to a release's flags, measured side by side in one run.

    .venv/bin/python tests/bench/cli_flags_bench.py [--python VENV/bin/python] [--repeat 3]

Uses the runnable 0.5.23 test venv by default (built by the tests). Prints the median seconds of
cold `--help`, a cache hit (package probe + key + read, what the module does on a hit) and source
mode, then the ratios as the last line. Not a test: nothing is asserted.
"""

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "bench"))

from helpers import collections_root, help_venv  # noqa: E402
from timing import median_seconds  # noqa: E402

sys.path.insert(0, str(collections_root()))

from ansible_collections.gpufleet.sglang.plugins.modules import cli_flags_info as module  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", help="interpreter with a runnable sglang (default: the test venv)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    python = args.python or str(help_venv("0.5.23") / "bin" / "python")
    argv = [python, "-m", "sglang.launch_server", "--help"]
    cache = tempfile.mkdtemp(prefix="cli-flags-bench-")
    base = {"argv": argv, "source_dir": None, "timeout": 120, "environment": {}, "filter": None,
            "filter_type": "prefix"}

    def cold_help():
        r = module.discover(dict(base, method="help", cache=None), check_mode=False)
        assert r["method"] == "help"

    def source_mode():
        r = module.discover(dict(base, method="source", cache=None), check_mode=False)
        assert r["method"] == "source"

    module.discover(dict(base, method="auto", cache=cache), check_mode=False)

    def cache_hit():
        r = module.discover(dict(base, method="auto", cache=cache), check_mode=False)
        assert r["cached"]

    cold = median_seconds(cold_help, args.repeat, warmup=False)
    hit = median_seconds(cache_hit, args.repeat * 3, warmup=False)
    source = median_seconds(source_mode, args.repeat * 3, warmup=False)
    print("python:     %s" % python)
    print("cold --help %.3f s" % cold)
    print("cache hit   %.3f s" % hit)
    print("source mode %.3f s" % source)
    print("help/cache=%.1f help/source=%.1f" % (cold / hit, cold / source))


if __name__ == "__main__":
    main()
