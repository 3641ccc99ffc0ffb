"""Timing for the benchmark scripts: medians of repeated runs after a warm-up run."""

import resource
import statistics
import time


def median_seconds(fn, repeat, warmup=True):
    """Median wall time of fn() over `repeat` runs; one unmeasured run first warms the caches."""
    if warmup:
        fn()
    times = []
    for _round in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_medians(fns, repeat):
    """({name: median wall time}, {name: median CPU time}) of each fn in fns, run in turn `repeat`
    rounds after one warm-up run each.

    Taking turns spreads a change in the machine's load over all of them, so their ratios hold
    where medians taken one after the other would compare different moments. The CPU time (this
    process's threads and the children it waited for) hardly moves with the load at all.
    """
    for fn in fns.values():
        fn()
    wall = dict((name, []) for name in fns)
    cpu = dict((name, []) for name in fns)
    for _round in range(repeat):
        for name, fn in fns.items():
            cpu_start, start = _cpu_seconds(), time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_cpu_seconds() - cpu_start)
    return (dict((name, statistics.median(t)) for name, t in wall.items()),
            dict((name, statistics.median(t)) for name, t in cpu.items()))


def _cpu_seconds():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
