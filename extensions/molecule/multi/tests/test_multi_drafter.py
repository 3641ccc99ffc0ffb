"""The drafter reaches the host (roles/sglang_dflash/tasks/drafter.yml, module sglang_drafter), over SSH as the
non-root user ops with become, from the lab's Hugging Face mirror: olah from PyPI on the controller's 127.0.0.1,
serving a drafter repo made here (config.json + 4 MiB of safetensors, LFS objects) offline; the node reaches it
through the SSH connection's remote forward, as a GPU host without internet reaches the fleet's mirror.
Runs after test_multi.py (file order): the first replica is switched, the second was rolled back."""

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import REPO, recap_changed, server_info  # noqa: E402

testinfra_hosts = ["podman://gpufleet-multi"]
HOST = "gpufleet-multi"
MIRROR_PORT = 18141
SSH_PORT = 22141
DRAFTER = "lab/qwen3.6-27b-dflash"
STORE = "/var/lib/gpufleet-sglang/drafters"
LAB = os.path.join(REPO, "tests", "containers", "lab-olah.sh")
GROUP_VARS = os.path.join(os.path.dirname(__file__), "..", "group_vars", "gpu_inference.yml")


def lab(*args):
    return subprocess.run([LAB] + list(args), capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("olah"))
    commit = lab("repo", root, DRAFTER, "16", "4", "2")
    lab("start", root, str(MIRROR_PORT))
    yield {"root": root, "commit": commit, "repo_dir": os.path.join(root, "mirrors", "models", DRAFTER)}
    lab("stop", root)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    """The node over SSH as ops with become (its GPUs and services as the scenario's group_vars say); the
    mirror's port forwarded into the node over the same connection."""
    with open(GROUP_VARS) as handle:
        group_vars = yaml.safe_load(handle)
    group_vars.update({
        "ansible_host": "127.0.0.1", "ansible_port": SSH_PORT, "ansible_user": "ops", "ansible_become": True,
        "ansible_ssh_private_key_file": os.path.join(os.environ["GPUFLEET_LAB_SSH_DIR"], "id_ed25519"),
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                                   "-R 127.0.0.1:%d:127.0.0.1:%d"
                                   % (MIRROR_PORT, MIRROR_PORT),
        "ansible_pipelining": True,
        "sglang_dflash_drafter_endpoint": "http://127.0.0.1:%d" % MIRROR_PORT,
        "sglang_dflash_drafter_stall_timeout": 10,
    })
    path = tmp_path_factory.mktemp("inventory") / "hosts.yml"
    path.write_text(yaml.safe_dump({"gpu_inference": {"hosts": {HOST: None}, "vars": group_vars}}))
    return str(path)


def run(inventory, playbook, *extra):
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", playbook)]
                          + list(extra), capture_output=True, text=True, check=False,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    proc.output = proc.stdout + "\n" + proc.stderr
    return proc


def services_with(source):
    """Both replicas with the same drafter (block size 16): one copy for both. The speed proof is test_multi.py's
    (each deploy here skips it: this file's time is the drafter's)."""
    return json.dumps({"sglang_dflash_speed_probe": False, "sglang_dflash_services": [
        {"name": "sglang-qwen-a", "drafter": source},
        {"name": "sglang@*", "drafter": source, "block_size": 16}]})


def role_drafter(source, **more):
    """sglang_dflash_drafter for every service of the host, in place of the scenario's drafter path (the role refuses
    the two set together)."""
    return json.dumps(dict({"sglang_dflash_drafter": source, "sglang_dflash_draft_model_path": None}, **more))


def store_listing(host):
    return host.run("find %s /var/lib/gpufleet-small -printf '%%p %%s\\n' 2>/dev/null | sort" % STORE).stdout


def test_both_replicas_switch_onto_one_fetched_copy_and_a_rerun_changes_nothing(host, inventory, mirror):
    source = {"repo": DRAFTER, "revision": mirror["commit"]}
    path = "%s/%s/%s" % (STORE, DRAFTER.replace("/", "--"), mirror["commit"])
    first = run(inventory, "deploy_dflash.yml", "-e", services_with(source))
    assert first.returncode == 0, first.output
    # Both services run the one verified copy: the drafter preflight read its config.json before the switch.
    assert server_info(host, 30000)["speculative_draft_model_path"] == path
    assert server_info(host, 30002)["speculative_draft_model_path"] == path
    assert host.file(path + "/model-00001-of-00002.safetensors").exists
    assert host.run("ls -d %s/%s/*/ | wc -l" % (STORE, DRAFTER.replace("/", "--"))).stdout.strip() == "1"
    assert "%s: drafter for sglang-qwen-a, sglang@*: hub %s@%s" % (HOST, DRAFTER, mirror["commit"]) in first.output
    assert "verified, fetched 4" in first.output
    listing = store_listing(host)
    # A rerun with nothing to do reads the host once and stops there: the copy both services run is not fetched,
    # moved or removed.
    second = run(inventory, "deploy_dflash.yml", "-e", services_with(source))
    assert second.returncode == 0, second.output
    assert recap_changed(second.output, HOST) == 0, second.output
    assert "DFLASH unchanged, running, not restarted" in second.output
    assert store_listing(host) == listing
    # The drafter step alone checks the copy again, against its manifest, and fetches nothing.
    fetched = run(inventory, "fetch_drafter.yml", "-e", services_with(source))
    assert fetched.returncode == 0 and recap_changed(fetched.output, HOST) == 0, fetched.output
    assert "verified, already there" in fetched.output
    assert store_listing(host) == listing


def test_the_fleet_report_shows_each_services_drafter_and_whether_its_verified_copy_is_there(host, inventory, mirror,
                                                                                             tmp_path):
    """gather_facts.yml reads and never fetches: the store's copy of each service's pinned revision, or its absence
    (which does not block the row: a deployment fetches it first)."""
    fetched = {"repo": DRAFTER, "revision": mirror["commit"]}
    elsewhere = {"repo": DRAFTER, "revision": "1" * 40}  # a commit no run fetched (the mirror is not asked)
    services = json.loads(services_with(fetched))
    services["sglang_dflash_services"][1]["drafter"] = elsewhere
    proc = run(inventory, "gather_facts.yml", "-e", json.dumps(services), "-e",
               "sglang_fleet_report_dir=%s" % tmp_path)
    assert proc.returncode == 0, proc.output
    assert recap_changed(proc.output, HOST) == 0
    rows = dict((r["unit"], r) for r in json.loads((tmp_path / "fleet-report.json").read_text())["hosts"])
    a, b = rows["sglang-qwen-a.service"]["drafter"], rows["sglang@qwen-b.service"]["drafter"]
    path = "%s/%s/%s" % (STORE, DRAFTER.replace("/", "--"), mirror["commit"])
    assert (a["source"], a["repo"], a["revision"], a["path"]) == ("hub", DRAFTER, mirror["commit"], path)
    on_disk = host.check_output("find %s -type f ! -name .gpufleet-drafter.json -printf '%%s\\n'" % path).split()
    assert (a["present"], a["verified"], a["size"]) == (True, True, sum(int(n) for n in on_disk)), a
    assert (b["present"], b["verified"]) == (False, False), b
    assert rows["sglang@qwen-b.service"]["status"] == "ready", rows["sglang@qwen-b.service"]["reasons"]
    md = (tmp_path / "fleet-report.md").read_text()
    assert "hub %s@%s: verified copy present (%d bytes, verified " % (DRAFTER, mirror["commit"], a["size"]) in md
    assert "hub %s@%s: not on the host yet (a deployment, or playbooks/fetch_drafter.yml, fetches it)" % (
        DRAFTER, "1" * 40) in md


def test_a_controller_directory_is_pushed_over_ssh_verified_and_a_rerun_transfers_nothing(host, inventory, mirror,
                                                                                          tmp_path):
    src = tmp_path / "Qwen3.6-27B-DFlash-local"
    src.mkdir()
    with open(os.path.join(mirror["repo_dir"], "config.json"), "rb") as handle:
        (src / "config.json").write_bytes(handle.read())
    (src / "model.safetensors").write_bytes(os.urandom(1024 * 1024))
    source = {"src": str(src), "name": "lab-pushed"}
    first = run(inventory, "fetch_drafter.yml", "-e", role_drafter(source))
    assert first.returncode == 0, first.output
    copies = host.check_output("ls -d %s/lab-pushed/local-*/" % STORE).split()
    assert len(copies) == 1, copies
    for name in ("config.json", "model.safetensors"):
        local = hashlib.sha256((src / name).read_bytes()).hexdigest()
        assert host.check_output("sha256sum %s%s" % (copies[0], name)).split()[0] == local, name
    assert "drafter for every other service: controller lab-pushed (local-" in first.output
    assert ", verified, fetched %d bytes" % sum(f.stat().st_size for f in src.iterdir()) in first.output
    again = run(inventory, "fetch_drafter.yml", "-e", role_drafter(source))
    assert again.returncode == 0, again.output
    assert recap_changed(again.output, HOST) == 0, again.output
    assert "verified, already there" in again.output


def test_a_revision_that_does_not_exist_is_refused_naming_repo_and_revision(inventory, mirror):
    missing = "0" * 40
    proc = run(inventory, "fetch_drafter.yml", "-e", role_drafter({"repo": DRAFTER, "revision": missing}))
    assert proc.returncode != 0
    # olah: HTTP 500 for a commit sha the repo does not have (a hub: 404); either way repo and revision are named.
    assert "revision %s of the repo %s (HTTP " % (missing, DRAFTER) in proc.output, proc.output


@pytest.fixture
def small_disk():
    """A 2 MiB tmpfs in the node (mounting needs CAP_SYS_ADMIN in the container: a privileged exec)."""
    mount = "mkdir -p /var/lib/gpufleet-small && mount -t tmpfs -o size=2m,mode=0755 tmpfs /var/lib/gpufleet-small"
    subprocess.run(["podman", "exec", "--privileged", HOST, "sh", "-c", mount], check=True)
    yield "/var/lib/gpufleet-small"
    subprocess.run(["podman", "exec", "--privileged", HOST, "umount", "/var/lib/gpufleet-small"], check=False)


def test_a_full_disk_is_refused_before_anything_is_written(host, inventory, mirror, small_disk):
    assert host.run("df -B1 --output=size %s | tail -1" % small_disk).stdout.strip() == str(2 * 1024 * 1024)
    before = store_listing(host)
    proc = run(inventory, "fetch_drafter.yml", "-e", role_drafter(
        {"repo": DRAFTER, "revision": mirror["commit"]},
        sglang_dflash_drafter_store_dir="/var/lib/gpufleet-small/drafters", sglang_dflash_drafter_min_free_percent=0))
    assert proc.returncode != 0
    assert "not enough disk space on %s for the drafter at /var/lib/gpufleet-small/drafters/" % HOST in proc.output
    assert "bytes free (filesystem of /var/lib/gpufleet-small)" in proc.output, proc.output
    assert store_listing(host) == before


def test_a_corrupt_file_on_the_mirror_is_refused_with_its_name_and_both_digests(host, inventory, mirror):
    # A second revision whose weight is damaged on the mirror's disk after its pointer was written.
    commit = lab("repo", mirror["root"], "lab/corrupt-dflash", "16", "1", "1")
    objects = os.path.join(mirror["root"], "mirrors", "models", "lab", "corrupt-dflash", ".git", "lfs", "objects")
    obj = [os.path.join(d, f) for d, _s, fs in os.walk(objects) for f in fs][0]
    expected = os.path.basename(obj)
    with open(obj, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff\xff\xff\xff")
    with open(obj, "rb") as handle:
        got = hashlib.sha256(handle.read()).hexdigest()
    proc = run(inventory, "fetch_drafter.yml", "-e", role_drafter({"repo": "lab/corrupt-dflash", "revision": commit}))
    assert proc.returncode != 0
    assert "model-00001-of-00001.safetensors of lab/corrupt-dflash" in proc.output, proc.output
    assert "sha256 %s, expected %s" % (got, expected) in proc.output
    assert not host.file("%s/lab--corrupt-dflash/%s" % (STORE, commit)).exists


def test_a_transfer_killed_halfway_is_resumed_and_verified(host, inventory, mirror):
    commit = lab("repo", mirror["root"], "lab/resume-dflash", "16", "4", "2")
    base = "%s/lab--resume-dflash" % STORE
    extra = role_drafter({"repo": "lab/resume-dflash", "revision": commit})
    slow = role_drafter({"repo": "lab/resume-dflash", "revision": commit},
                        sglang_dflash_drafter_bandwidth_limit=256 * 1024)
    # 4 MiB at 256 KiB/s: killed (SIGKILL, no clean-up) once the first shard is in and the second under way.
    proc = subprocess.Popen(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "fetch_drafter.yml"),
                             "-e", slow], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        lock = "%s/.%s.lock" % (base, commit)
        second = "%s/.partial-%s/model-00002-of-00002.safetensors" % (base, commit)
        for _attempt in range(120):
            if host.run("test -s %s" % second).rc == 0:
                break
            time.sleep(0.25)
        holder = json.loads(host.file(lock).content_string)
        host.run("kill -9 %d" % holder["pid"])
    finally:
        proc.kill()
        proc.wait()
    assert not host.file("%s/%s" % (base, commit)).exists
    assert host.file(lock).exists  # the killed run's lock stays behind, stale
    rerun = run(inventory, "fetch_drafter.yml", "-e", extra)
    assert rerun.returncode == 0, rerun.output
    pointer = os.path.join(mirror["root"], "mirrors", "models", "lab", "resume-dflash",
                           "model-00002-of-00002.safetensors")
    with open(pointer) as handle:
        lfs = dict(line.split(" ", 1) for line in handle.read().splitlines())
    shard = host.check_output("sha256sum %s/%s/model-00002-of-00002.safetensors" % (base, commit)).split()[0]
    assert "sha256:" + shard == lfs["oid"]
    assert not host.file(lock).exists and not host.file("%s/.partial-%s" % (base, commit)).exists
    # The first shard was kept (verified again, not fetched again).
    fetched = int(rerun.output.split("verified, fetched ")[1].split(" ")[0])
    assert fetched < 4 * 1024 * 1024, rerun.output
