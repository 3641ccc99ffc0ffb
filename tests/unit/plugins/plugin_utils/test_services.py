"""Several services on one host (plugin_utils/_services.py and the plan): each entry's own settings, refused by
the entry's name when wrong; GPU checks per service, a sibling on other GPUs is no holder, one on the same GPUs
is refused naming both."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._messages import refusal_message
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._services import (
    apply_service_entry,
    own_gpus,
    settings_for_service,
)
from plan_facts import NEXTN, SETTINGS, facts_for

H100X8 = [{"index": i, "uuid": "GPU-%d0000000-aaaa" % i} for i in range(8)]


def replica(unit, indexes, active="active", source="CUDA_VISIBLE_DEVICES", port=30000):
    return {"unit": unit, "active_state": active, "port": port,
            "gpus": {"indexes": indexes, "source": source if indexes is not None else None, "problem": None}}


def box(own, siblings, processes=(), selected=()):
    """The facts of sglang-qwen.service (NEXTN) on an 8-GPU box with its sibling SGLang units."""
    me = replica("sglang-qwen.service", own, port=30001)
    return facts_for(NEXTN, service=me, sglang_units=[me] + list(siblings),
                     selected_units=["sglang-qwen.service"] + list(selected),
                     gpus={"nvidia_smi": "present", "gpus": H100X8, "processes": list(processes)})


def holder(pid, gpu, unit):
    return {"pid": pid, "gpu_index": gpu, "process_name": "python3", "unit": unit, "used_memory_mib": 20000}


def test_a_sibling_on_other_gpus_is_neither_an_overlap_nor_a_holder():
    facts = box([0, 1, 2, 3], [replica("sglang@b.service", [4, 5, 6, 7])],
                [holder(10, 0, "sglang-qwen.service"), holder(11, 4, "sglang@b.service")])
    assert deployment_plan(facts, SETTINGS)["errors"] == []
    assert deployment_plan(facts, SETTINGS)["gpus"] == [0, 1, 2, 3]


def test_a_sibling_sharing_gpus_is_refused_naming_both():
    facts = box([0, 1, 2, 3], [replica("sglang@c.service", [3, 4])], [holder(11, 3, "sglang@c.service")])
    errors = deployment_plan(facts, SETTINGS)["errors"]
    assert any("sglang-qwen.service (GPUs 0,1,2,3 from CUDA_VISIBLE_DEVICES) and sglang@c.service (GPUs 3,4 from "
               "CUDA_VISIBLE_DEVICES) share GPU 3" in e for e in errors), errors
    # Opted out of the GPU checks, as for any holder.
    assert deployment_plan(facts, dict(SETTINGS, require_free_gpus=False))["errors"] == []
    # Its process on GPU 3 is also a holder of this service's GPUs.
    assert any(e.startswith("GPUs 0,1,2,3 of sglang-qwen.service are held by processes the deployment would not "
                            "stop: GPU 3 pid 11 (python3, sglang@c.service") for e in errors), errors


def test_a_sibling_that_neither_runs_nor_is_selected_does_not_count():
    facts = box([0, 1], [replica("sglang-old.service", None, active="inactive")])
    assert deployment_plan(facts, SETTINGS)["errors"] == []
    facts = box([0, 1], [replica("sglang-old.service", None, active="inactive")], selected=["sglang-old.service"])
    assert any("sglang-old.service (every GPU) share GPUs 0,1" in e for e in deployment_plan(facts, SETTINGS)["errors"])


def test_a_service_given_no_gpus_shares_every_gpu_with_a_running_sibling():
    errors = deployment_plan(box(None, [replica("sglang@b.service", [4, 5])]), SETTINGS)["errors"]
    assert any("sglang-qwen.service (every GPU) and sglang@b.service (GPUs 4,5 from CUDA_VISIBLE_DEVICES) share "
               "GPUs 4,5" in e for e in errors), errors


def test_a_sibling_listed_to_stop_is_neither_an_overlap_nor_a_holder():
    facts = box([0, 1], [replica("sglang-old.service", [0, 1])], [holder(12, 0, "sglang-old.service")])
    settings = dict(SETTINGS, stop_units=["train-qwen.service", "sglang-old.service"])
    facts["related_units"]["sglang-old.service"] = {"exists": True, "active_state": "active"}
    assert deployment_plan(facts, settings)["errors"] == []


def test_the_entry_overrides_the_role_settings_and_its_problems_name_it():
    entry = {"name": "sglang@*", "block_size": "8", "draft_model_path": "/models/b8"}
    settings, problems, labels = apply_service_entry(dict(SETTINGS), entry)
    assert settings["block_size"] == "8" and settings["draft_model_path"] == "/models/b8" and problems == []
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, service_entry={"name": "sglang@*", "block_size": 0}))
    assert "sglang_dflash_services (sglang@*) block_size must be between 1 and 1024, not 0" in plan["errors"]
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, service_entry={"name": "x", "stop_units": ["a"]}))
    assert any(e.startswith("sglang_dflash_services (x): stop_units cannot be set per service") for e in plan["errors"])


def test_the_environment_of_the_entry_decides_the_gpus_after_the_switch():
    facts = box([0, 1, 2, 3], [])
    assert own_gpus(facts, {"environment": {"CUDA_VISIBLE_DEVICES": "GPU-50000000, 6"}}) == (
        [5, 6], "CUDA_VISIBLE_DEVICES of sglang_dflash_environment")
    assert own_gpus(facts, {}) == ([0, 1, 2, 3], "CUDA_VISIBLE_DEVICES")


def test_the_port_systemd_expands_is_the_old_port_when_the_command_names_a_variable():
    line = NEXTN.replace("--port 30001", "--port ${SGLANG_PORT}")
    facts = facts_for(line, service=replica("sglang-qwen.service", [0], port=30002))
    plan = deployment_plan(facts, SETTINGS)
    assert plan["errors"] == [] and plan["old_port"] == 30002 and plan["port"] == 30002
    assert "--port ${SGLANG_PORT}" in plan["files"]["config"]["content"]
    # Without the facts' map the port cannot be told, and the plan says what to set.
    plan = deployment_plan(facts_for(line), SETTINGS)
    assert any("cannot tell the server's port from --port ${SGLANG_PORT}" in e for e in plan["errors"])


def test_a_unit_to_stop_waits_for_the_service_whose_gpus_it_holds():
    settings = dict(SETTINGS, stop_units=["train-qwen.service", "cron-job.service"])
    facts = box([0, 1, 2, 3], [replica("sglang@b.service", [4, 5, 6, 7])], [holder(7, 6, "train-qwen.service")],
                selected=["sglang@b.service"])
    facts["related_units"]["cron-job.service"] = {"exists": True, "active_state": "active"}
    assert deployment_plan(facts, settings)["stop_units_now"] == ["cron-job.service"]
    facts = box([4, 5, 6, 7], [replica("sglang@a.service", [0, 1, 2, 3])], [holder(7, 6, "train-qwen.service")],
                selected=["sglang@a.service"])
    facts["related_units"]["cron-job.service"] = {"exists": True, "active_state": "active"}
    assert deployment_plan(facts, settings)["stop_units_now"] == ["train-qwen.service", "cron-job.service"]


def test_a_unit_to_stop_on_no_selected_service_gpus_is_stopped_as_asked():
    # The operator's box: the service on GPUs 1-3, the training job on GPU 0 (no other service selected): stopped.
    facts = box([1, 2, 3], [], [holder(7, 0, "train-qwen.service")])
    assert deployment_plan(facts, SETTINGS)["stop_units_now"] == ["train-qwen.service"]
    # A sibling on GPU 0 that runs but is not switched in this run does not take the job over either.
    facts = box([1, 2, 3], [replica("sglang-other.service", [0])], [holder(7, 0, "train-qwen.service")])
    assert deployment_plan(facts, dict(SETTINGS, require_free_gpus=False))["stop_units_now"] == ["train-qwen.service"]


def test_the_settings_of_a_service_come_from_the_host_s_and_its_facts():
    # The role templates its settings once per host; the unit name, the entry that selected the service and this
    # collection's environment file for it come from that service's facts.
    host = {"service_name": "sglang", "services": [{"name": "sglang-a"}, {"name": "sglang@*", "block_size": 8}],
            "block_size": 16}
    facts = {"selected_by": 1, "unit": {"name": "sglang@qwen-b"},
             "managed_paths": {"env_file": "/etc/sglang/sglang@qwen-b.env"}}
    raw = settings_for_service(host, facts)
    assert raw == {"service_name": "sglang@qwen-b", "service_entry": {"name": "sglang@*", "block_size": 8},
                   "block_size": 16, "env_file": "/etc/sglang/sglang@qwen-b.env"}
    assert "services" in host  # the host's settings are not changed
    # Without sglang_dflash_services: no entry; a unit that does not exist yet keeps the role's name.
    assert settings_for_service({"service_name": "sglang", "services": []}, {"unit": {"exists": False}}) == {
        "service_name": "sglang", "service_entry": None, "env_file": None}


def gpu_overlap_refusal():
    """The issue's refusal: llm@alpha on GPUs 0-3 against llm@gamma, whose process runs on GPUs 0,1."""
    me = dict(replica("llm@alpha.service", [0, 1, 2, 3], port=30011))
    gamma = replica("llm@gamma.service", [0, 1], port=30013)
    facts = facts_for(NEXTN, service=me, sglang_units=[me, gamma], selected_units=["llm@alpha.service"],
                      capabilities={"speculative_algorithm": True}, algorithms=["EAGLE", "EAGLE3", "NEXTN", "NGRAM"],
                      package={"version": "0.5.23", "install": "regular", "python": "/opt/llm/bin/python3",
                               "location": "/opt/llm/lib/python3.11/site-packages/sglang"},
                      gpus={"nvidia_smi": "present", "gpus": H100X8, "processes": []})
    facts["unit"]["id"] = "llm@alpha.service"
    plan = deployment_plan(facts, dict(SETTINGS, stop_units=[], service_name="llm@alpha"))
    return plan, refusal_message(plan, facts, "gpu-box-1", "DFLASH")


def test_a_gpu_overlap_refusal_is_short_and_names_both_units_their_gpus_and_the_ways_out():
    plan, message = gpu_overlap_refusal()
    assert len(message) < 600, (len(message), message)
    assert "llm@alpha.service (GPUs 0,1,2,3 from CUDA_VISIBLE_DEVICES) and llm@gamma.service (GPUs 0,1 from " \
           "CUDA_VISIBLE_DEVICES) share GPUs 0,1" in message
    for way_out in ("give each service its own GPUs (CUDA_VISIBLE_DEVICES", "add llm@gamma.service to "
                    "sglang_dflash_stop_units", "set sglang_dflash_require_free_gpus=false"):
        assert way_out in message
    # The release's flags bear on flag refusals only.
    assert "--speculative-" not in message and "Algorithms this release knows" not in message
    assert plan["flag_errors"] == []


def test_a_refusal_about_the_algorithm_still_lists_what_the_release_has():
    # A build without DDTREE: its flags bear on the reason.
    facts = facts_for(NEXTN, capabilities={"speculative_algorithm": True}, algorithms=["DFLASH", "EAGLE"],
                      package={"version": "0.5.23", "install": "regular", "location": "/opt/x"})
    plan = deployment_plan(facts, dict(SETTINGS, stop_units=[], require_free_gpus=False, algorithm="DDTREE",
                                       ddtree_budget=15))
    message = refusal_message(plan, facts, "gpu-box-1", "DDTREE")
    assert plan["flag_errors"] and "speculative algorithm DDTREE is not supported by this release" in message
    assert "Algorithms this release knows: DFLASH, EAGLE. Speculative flags it has: --speculative-" in message
    assert "(regular install at /opt/x" in message


def test_a_restart_gives_the_gpus_and_port_the_files_say_now():
    # Its process runs on GPUs 0,1 (port 30013); the files, edited since, say no GPU and port 30014.
    me = dict(replica("sglang-qwen.service", [0, 1], port=30013), environment_drift=["CUDA_VISIBLE_DEVICES"],
              after_restart={"port": 30014, "gpus": {"indexes": [], "source": "CUDA_VISIBLE_DEVICES"}})
    facts = facts_for(NEXTN, service=me, sglang_units=[me], selected_units=["sglang-qwen.service"],
                      gpus={"nvidia_smi": "present", "gpus": H100X8, "processes": []})
    assert own_gpus(facts, SETTINGS) == ([], "CUDA_VISIBLE_DEVICES")
    plan = deployment_plan(facts, dict(SETTINGS, stop_units=[]))
    assert plan["gpus"] == []
