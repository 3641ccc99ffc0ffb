"""Day two on the switched node, in order, each step a real ansible-playbook run: the host's switch state in the
fleet report (current; drifted after the operator edits their unit; broken after the release under the unit's
interpreter is replaced by one that names a written flag otherwise), a deploy that re-bases on both, then the way
back (check mode, the revert, a second revert) and the revert's refusals. Runs after test_default.py and
test_faults.py (file order), which need the switched node."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import DROPIN, UNIT, health_status, playbook, recap_changed, rollout, server_info, show  # noqa: E402

testinfra_hosts = ["podman://gpufleet-default"]
NODE = "gpufleet-default"
OUR_DROPIN = "/etc/systemd/system/sglang.service.d/" + DROPIN
OUR_ENV = "/etc/sglang/sglang.env"
SITE = "/opt/sglang-0.5.23/lib/python3.11/site-packages"
OPERATOR_EDIT = "--chunked-prefill-size 4096"


def switch_state(tmp_path):
    """The node's switch state as playbooks/gather_facts.yml reports it."""
    run = playbook("gather_facts.yml", "-e", "sglang_fleet_report_dir=%s" % tmp_path)
    assert run.returncode == 0, run.output[-3000:]
    (row,) = json.loads((tmp_path / "fleet-report.json").read_text())["hosts"]
    assert "%s</strong>" % row["switch"]["state"] in (tmp_path / "fleet-report.html").read_text()
    return row["switch"]


def operator_files(host):
    """Every file of the unit that is not ours, with its checksum."""
    return host.check_output("find /etc/systemd/system/sglang.service /etc/systemd/system/sglang.service.d "
                             "-type f ! -name %s -exec sha256sum {} + | sort" % DROPIN)


def test_right_after_the_switch_the_host_is_current(host, tmp_path):
    state = switch_state(tmp_path)
    assert state["state"] == "current" and state["todo"] == "nothing", state


def test_an_edit_of_the_operators_unit_is_drift_and_a_deploy_rebases_on_it(host, tmp_path):
    host.check_output("sed -i 's|^ExecStart=\\(.*\\)$|ExecStart=\\1 %s|' %s && systemctl daemon-reload"
                      % (OPERATOR_EDIT, UNIT))
    state = switch_state(tmp_path)
    assert state["state"] == "drifted", state
    assert "the operator's files changed since the switch (%s)" % UNIT in state["reason"]
    assert "re-run playbooks/deploy_dflash.yml" in state["todo"]
    run = rollout()
    assert run.returncode == 0 and recap_changed(run.output, NODE) > 0, run.output[-3000:]
    assert OPERATOR_EDIT in show(host, "sglang.service", "ExecStart")["ExecStart"]
    assert switch_state(tmp_path)["state"] == "current"


def test_a_release_that_renames_a_written_flag_is_broken_before_any_restart(host, tmp_path):
    # The package behind the unit's interpreter replaced by 0.5.11 (a downgrade): 0.5.11 calls the draft window
    # flag --speculative-dflash-draft-window-size, and its parser refuses the --speculative-draft-window-size
    # our drop-in passes.
    pid = show(host, "sglang.service", "MainPID")["MainPID"]
    host.check_output("rm -rf {site}/sglang {site}/sglang-0.5.23.dist-info && cp -a /opt/sglang-0.5.11/lib/"
                      "python3.11/site-packages/sglang /opt/sglang-0.5.11/lib/python3.11/site-packages/"
                      "sglang-0.5.11.dist-info {site}/".format(site=SITE))
    state = switch_state(tmp_path)
    assert state["state"] == "broken by a package change", state
    assert state["reason"].startswith("sglang 0.5.23 -> 0.5.11: the command in our drop-in passes "
                                      "--speculative-draft-window-size, not a flag of sglang 0.5.11 (it is "
                                      "--speculative-dflash-draft-window-size there)"), state["reason"]
    assert show(host, "sglang.service", "MainPID")["MainPID"] == pid  # shown before anyone restarts it

    run = rollout()
    assert run.returncode == 0 and recap_changed(run.output, NODE) > 0, run.output[-3000:]
    exec_start = show(host, "sglang.service", "ExecStart")["ExecStart"]
    assert "--speculative-dflash-draft-window-size 2048" in exec_start and OPERATOR_EDIT in exec_start
    assert health_status(host) == "200" and server_info(host)["speculative_algorithm"] == "DFLASH"
    assert switch_state(tmp_path)["state"] == "current"


def test_revert_in_check_mode_shows_what_it_removes_and_changes_nothing(host):
    files = host.check_output("find /etc/systemd/system /etc/sglang -type f -exec sha256sum {} + | sort")
    pid = show(host, "sglang.service", "MainPID")["MainPID"]
    run = playbook("revert_dflash.yml", "--check", "--diff")
    assert run.returncode == 0, run.output[-3000:]
    assert "removed: %s  %s" % (OUR_DROPIN, OUR_ENV) in run.output
    for path in (OUR_DROPIN, OUR_ENV):  # the diff of each removal
        assert re.search(r'"path": "%s",\n-\s+"state": "file"\n\+\s+"state": "absent"' % re.escape(path),
                         run.output), run.output[-3000:]
    assert host.check_output("find /etc/systemd/system /etc/sglang -type f -exec sha256sum {} + | sort") \
        == files
    assert show(host, "sglang.service", "MainPID")["MainPID"] == pid


def test_revert_restarts_the_operators_own_command_and_keeps_their_files_byte_for_byte(host):
    theirs = operator_files(host)
    run = playbook("revert_dflash.yml", "-e", "sglang_dflash_restart_stopped_units=true")
    assert run.returncode == 0, run.output[-3000:]
    assert recap_changed(run.output, NODE) > 0
    assert not host.file(OUR_DROPIN).exists and not host.file(OUR_ENV).exists
    assert operator_files(host) == theirs
    exec_start = show(host, "sglang.service", "ExecStart")["ExecStart"]
    assert OPERATOR_EDIT in exec_start and "--speculative" not in exec_start  # the operator's change is kept
    assert health_status(host) == "200" and server_info(host)["speculative_algorithm"] is None
    # Proven and measured against the DFlash server it replaced (SIMULATED acceptance 6.4 before).
    assert "%s: sglang.service (revert) sglang 0.5.11: back to the operator's command" % NODE in run.output
    assert re.search(r"  speed: tokens/s [\d.]+ -> [\d.]+ \([\d.]+x\), acceptance 6\.40 -> -", run.output), \
        run.output[-3000:]
    record = json.loads(host.file("/var/lib/gpufleet-sglang/sglang.service.last-rollout.json").content_string)
    assert record["outcome"] == "reverted" and record["before"]["accept_length"] == 6.4
    assert host.service("train-qwen").is_running  # started again, as asked
    host.check_output("systemctl disable --now train-qwen.service")


def test_a_second_revert_changes_nothing(host, tmp_path):
    pid = show(host, "sglang.service", "MainPID")["MainPID"]
    run = playbook("revert_dflash.yml")
    assert run.returncode == 0 and recap_changed(run.output, NODE) == 0, run.output[-3000:]
    assert "%s: sglang.service (revert) sglang 0.5.11: not switched, unchanged" % NODE in run.output
    assert show(host, "sglang.service", "MainPID")["MainPID"] == pid
    assert switch_state(tmp_path)["state"] == "not switched"


def test_reverting_a_unit_that_does_not_exist_is_refused_by_name(host):
    run = playbook("revert_dflash.yml", "-e", "sglang_dflash_service_name=sglang-llama")
    assert run.returncode != 0
    assert ("host %s, unit sglang-llama.service: cannot revert the switch" % NODE) in run.output
    assert "unit sglang-llama.service does not exist on this host, so there is nothing to revert" in run.output


def test_our_dropin_edited_by_hand_is_refused_naming_it_and_nothing_changes(host):
    run = rollout()
    assert run.returncode == 0 and host.file(OUR_DROPIN).exists, run.output[-3000:]
    host.check_output("printf 'Environment=MY_OWN=1\\n' >> %s && systemctl daemon-reload" % OUR_DROPIN)
    files = host.check_output("find /etc/systemd/system /etc/sglang -type f -exec sha256sum {} + | sort")
    pid = show(host, "sglang.service", "MainPID")["MainPID"]
    run = playbook("revert_dflash.yml")
    assert run.returncode != 0
    assert "%s was edited by hand since the switch of" % OUR_DROPIN in run.output, run.output[-3000:]
    assert "Nothing was changed on this host" in run.output
    assert host.check_output("find /etc/systemd/system /etc/sglang -type f -exec sha256sum {} + | sort") \
        == files
    assert show(host, "sglang.service", "MainPID")["MainPID"] == pid
