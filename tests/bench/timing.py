"""Timing for the benchmark scripts: medians of repeated runs after a warm-up run."""

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
