"""Which processes hold a service's GPUs (plugin_utils/_gpus.py)."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._gpus import gpu_holders

GPUS = {"processes": [
    {"gpu_index": 0, "pid": 11, "process_name": "python3", "unit": "sglang.service", "used_memory_mib": 70000},
    {"gpu_index": 1, "pid": 12, "process_name": "python3", "unit": "trainer.service", "used_memory_mib": 5000},
    {"gpu_index": 1, "pid": 13, "process_name": "python3", "unit": None, "unit_source": "process gone",
     "used_memory_mib": 10},
    {"gpu_index": 2, "pid": 14, "process_name": "jupyter", "unit": None, "used_memory_mib": 20}]}


def test_the_holders_other_than_the_allowed_units_each_named_with_gpu_pid_owner_and_memory():
    assert gpu_holders(GPUS, {"sglang.service"}) == [
        "GPU 1 pid 12 (python3, trainer.service, 5000 MiB)",
        "GPU 1 pid 13 (python3, exited meanwhile, 10 MiB)",
        "GPU 2 pid 14 (jupyter, no unit, 20 MiB)"]


def test_only_the_gpus_asked_for_and_nothing_without_processes():
    assert gpu_holders(GPUS, {"sglang.service"}, [0, 2]) == ["GPU 2 pid 14 (jupyter, no unit, 20 MiB)"]
    assert gpu_holders(GPUS, {"sglang.service", "trainer.service"}, [1]) == [
        "GPU 1 pid 13 (python3, exited meanwhile, 10 MiB)"]
    assert gpu_holders({}, set()) == [] and gpu_holders(None, set()) == []
