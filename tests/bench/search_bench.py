"""Benchmark source_search's engines against grep, ripgrep and a naive walk, in one run.

    .venv/bin/python tests/bench/search_bench.py [--root DIR] [--repeat 5]

Default tree: the real sglang 0.5.23 package from the test venvs (about 4,700 .py files, 68 MB).
Every contender is run once to warm the page cache, then --repeat times; medians are printed and
the last line holds the ratios. rg and the ripgrep backend take turns round by round, so their
ratios compare the same moments of a busy machine; their CPU times (the ratio in parentheses) are
printed too, as they hardly move with the load. The ripgrep backend runs with *.py alone, with and without
sglang_info's 10 MiB limit (rg with --max-filesize shows what the limit costs rg itself), and as sglang_info runs
it (`module`: host_facts.IMPLEMENTATION_SEARCH's filter, which leaves out tests and __pycache__, its identifier
rule without case and its limit) against rg given the same globs and -i. Not a test: nothing is asserted.
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "bench"))

from helpers import collections_root, sglang_venv  # noqa: E402
from timing import interleaved_medians, median_seconds  # noqa: E402

sys.path.insert(0, str(collections_root()))

from ansible_collections.gpufleet.sglang.plugins.module_utils.host_facts import IMPLEMENTATION_SEARCH  # noqa: E402
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import LineMatcher  # noqa: E402
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.search import search  # noqa: E402
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import FileFilter  # noqa: E402

TERMS = ["DFLASH", "dflash", "speculative_dflash", "draft_window_size", "num_draft_tokens"]
# sglang_info's size limit (plugins/module_utils/host_facts.py).
MODULE_MAX_FILESIZE = IMPLEMENTATION_SEARCH["max_filesize"]


def naive_walk(root):
    """What operators write by hand: rglob, read_text, any(term in line)."""
    hits = 0
    for path in Path(root).rglob("*.py"):
        for line in path.read_text(errors="replace").splitlines():
            if any(t in line for t in TERMS):
                hits += 1
    return hits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="tree to search (default: sglang 0.5.23 from the test venv)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = args.root or str(next((sglang_venv("0.5.23") / "lib").glob("python3*/site-packages")) / "sglang")
    matcher = LineMatcher(TERMS, [], "substring", case_sensitive=True)
    file_filter = FileFilter(["*.py"], [])
    unlimited = dict(max_files=0, max_hits_per_file=0, max_total_hits=0)
    grep_argv = ["grep", "-rn", "--include=*.py"] + [a for t in TERMS for a in ("-e", t)] + [root]
    rg = shutil.which("rg")
    rg_argv = [rg, "-n", "--no-ignore", "--hidden", "-g", "*.py"] + [a for t in TERMS for a in ("-e", t)] + [root]

    def run_quiet(argv):
        return lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)

    def python_engine(m):
        return lambda: search([root], m, file_filter, backend="python", **unlimited)

    def rg_backend(max_filesize, m=matcher, f=file_filter):
        return lambda: search([root], m, f, backend="ripgrep", rg=rg, max_filesize=max_filesize, **unlimited)

    module_matcher = LineMatcher(TERMS, [], IMPLEMENTATION_SEARCH["match"], IMPLEMENTATION_SEARCH["case_sensitive"])
    module_filter = FileFilter(IMPLEMENTATION_SEARCH["include"], IMPLEMENTATION_SEARCH["exclude"])
    module_globs = [a for g in IMPLEMENTATION_SEARCH["include"] for a in ("-g", g)] + [
        a for g in IMPLEMENTATION_SEARCH["exclude"] for a in ("-g", "!" + g)]

    rows = {
        "python": median_seconds(python_engine(matcher), args.repeat),
        "grep": median_seconds(run_quiet(grep_argv), args.repeat),
        "naive": median_seconds(lambda: naive_walk(root), max(1, args.repeat // 2)),
    }
    cpu = {}
    if rg:
        wall, cpu = interleaved_medians({
            "rg": run_quiet(rg_argv),
            "rg-10MiB": run_quiet(rg_argv[:1] + ["--max-filesize", str(MODULE_MAX_FILESIZE)] + rg_argv[1:]),
            "rg-backend": rg_backend(0),
            "rg-backend-10MiB": rg_backend(MODULE_MAX_FILESIZE),
            "rg-module": run_quiet([rg, "-n", "-i", "--no-ignore", "--hidden", "--max-filesize",
                                    str(MODULE_MAX_FILESIZE)] + module_globs + [a for t in TERMS for a in ("-e", t)]
                                   + [root]),
            "rg-backend-module": rg_backend(MODULE_MAX_FILESIZE, module_matcher, module_filter),
        }, args.repeat)
        rows.update(wall)
    # The identifier rule (the default of the module) costs only on the lines that hold a term.
    ident = LineMatcher(TERMS, [], "identifier")
    rows["python-identifier"] = median_seconds(python_engine(ident), args.repeat)
    print("tree: %s" % root)
    for name, seconds in rows.items():
        print("%-18s %.3f s%s" % (name, seconds, "  (CPU %.3f s)" % cpu[name] if name in cpu else ""))
    ratios = ["python/grep=%.2f" % (rows["python"] / rows["grep"])]
    if rg:
        for name in ("rg-backend-10MiB", "rg-backend", "rg-10MiB"):
            ratios.append("%s/rg=%.2f (CPU %.2f)" % (name, rows[name] / rows["rg"], cpu[name] / cpu["rg"]))
        ratios.append("rg-backend-module/rg-module=%.2f (CPU %.2f)" % (
            rows["rg-backend-module"] / rows["rg-module"], cpu["rg-backend-module"] / cpu["rg-module"]))
    ratios.append("naive/python=%.1f" % (rows["naive"] / rows["python"]))
    print(" ".join(ratios))


if __name__ == "__main__":
    main()
