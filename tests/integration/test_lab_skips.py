"""What a no-op scripts/deploy.sh skips, and that each skip is keyed on its real inputs: the collection's install
(scripts/install-collection.sh: what galaxy would build) and the provisioning of the lab node
(tests/containers/provision-node.sh: the playbook, the files it copies, the inventory). The lab node's own skip is in
test_lab_node.py, the images' recipes are their build scripts' labels."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import REPO

VENV_BIN = REPO / ".venv" / "bin"


def sh(argv, cwd=REPO, env=None, check=True):
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=check)


def copy_files(paths, dest):
    for rel in paths:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)


# ---- the collection's install ------------------------------------------------------------------------------------

@pytest.fixture
def checkout(tmp_path):
    """A copy of the checkout's files (as git sees them, ignored ones left out), to change without touching it."""
    files = sh(["git", "ls-files", "-co", "--exclude-per-directory=.gitignore"]).stdout.split("\n")
    src = tmp_path / "src"
    copy_files([f for f in files if f and (REPO / f).is_file()], src)
    return src


def install(src, dest):
    env = dict(os.environ, PATH="%s:%s" % (VENV_BIN, os.environ["PATH"]))
    run = sh([src / "scripts" / "install-collection.sh", dest], env=env)
    assert run.stdout == "%s\n" % dest and run.stderr == ""
    return dest / "ansible_collections" / "gpufleet" / "sglang"


def test_the_collection_is_installed_again_only_when_what_galaxy_builds_changed(checkout, tmp_path):
    dest = tmp_path / "collections"
    installed = install(checkout, dest)
    mark = installed / "MARK"  # gone when the collection is installed again
    mark.write_text("")
    install(checkout, dest)
    assert mark.exists(), "installed again with nothing changed"

    # What galaxy leaves out of the tarball (build_ignore) changes nothing.
    (checkout / "fleet-report").mkdir()
    (checkout / "fleet-report" / "fleet-report.json").write_text("{}")
    install(checkout, dest)
    assert mark.exists(), "installed again for a file galaxy does not build"

    # A file of the collection: installed again, with the change.
    module = checkout / "plugins" / "modules" / "gpu_info.py"
    module.write_text(module.read_text() + "\n# changed\n")
    install(checkout, dest)
    assert not mark.exists() and (installed / "plugins" / "modules" / "gpu_info.py").read_text().endswith("# changed\n")

    # galaxy.yml (its MANIFEST.json), and a new file.
    galaxy_yml = (checkout / "galaxy.yml").read_text().replace("description:", "description: changed", 1)
    for path, text in ((checkout / "galaxy.yml", galaxy_yml), (checkout / "docs" / "new.md", "new\n")):
        mark.write_text("")
        path.write_text(text)
        install(checkout, dest)
        assert not mark.exists()

    # An install of other content (an older checkout's, by hand): installed again. Removed: installed again.
    files_json = installed / "FILES.json"
    files_json.write_text(files_json.read_text().replace('modules/gpu_info.py"', 'modules/gpu_info2.py"'))
    mark.write_text("")
    install(checkout, dest)
    assert not mark.exists()
    shutil.rmtree(installed)
    install(checkout, dest)
    assert (installed / "MANIFEST.json").exists()


# ---- the lab node's provisioning ---------------------------------------------------------------------------------

PROVISION = REPO / "tests" / "containers" / "provision.yml"


def provision_inputs():
    return sh(["tests/containers/provision-digest.sh", "--list"]).stdout.split()


def test_the_provision_digest_covers_every_file_the_playbook_copies():
    """Each src: of provision.yml, its variables read as any name, is one of the digest's inputs."""
    srcs = re.findall(r"^\s+src: \"?([^\"\n]+)\"?$", PROVISION.read_text(), re.M)
    assert len(srcs) >= 3
    inputs = set(provision_inputs())
    assert "tests/containers/provision.yml" in inputs
    for src in srcs:
        path = src.replace("{{ playbook_dir }}", "tests/containers")
        path = path.replace("{{ gpufleet_lab__collection }}", "tests/containers/../..")
        path = re.sub(r"\{\{[^}]*\}\}", "*", path)
        matched = [os.path.relpath(p, REPO) for p in REPO.glob(os.path.normpath(path)) if p.is_file()]
        assert matched and set(matched) <= inputs, (src, matched)


@pytest.fixture
def lab_tree(tmp_path):
    """The digest's scripts and inputs in a tree of their own, and an inventory."""
    tree = tmp_path / "tree"
    copy_files(provision_inputs() + ["tests/containers/provision-digest.sh", "tests/containers/provision-node.sh"],
               tree)
    shutil.copytree(REPO / "inventories" / "local", tree / "inventory")
    return tree


def digest(tree, inventory="inventory"):
    return sh([tree / "tests" / "containers" / "provision-digest.sh", inventory], cwd=tree).stdout.strip()


def test_the_provision_digest_changes_with_each_input_and_nothing_else(lab_tree):
    first = digest(lab_tree)
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    (lab_tree / "README.md").write_text("not an input\n")
    assert digest(lab_tree) == first
    # The same inventory elsewhere.
    shutil.copytree(lab_tree / "inventory", lab_tree / "elsewhere")
    assert digest(lab_tree, str(lab_tree / "elsewhere")) == first
    seen = {first}
    for rel in provision_inputs()[:3] + ["tests/fixtures/nvidia-smi/h100x8.gpus.csv",
                                         "inventory/group_vars/gpu_inference.yml", "inventory/hosts.yml"]:
        path = lab_tree / rel
        path.write_text(path.read_text() + "\n# changed\n")
        now = digest(lab_tree)
        assert now not in seen, rel
        seen.add(now)


def fake_tools(tmp_path):
    """podman exec on a directory standing for the node, ansible-playbook that writes down its runs."""
    node, calls = tmp_path / "node", tmp_path / "playbook-runs"
    node.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text(
        "#!/usr/bin/env bash\n"
        "# podman exec NAME ARGS...: ARGS run here, the node's /var/lib in %s\n"
        "[ \"$1\" = exec ] || exit 2\n"
        "shift 2\n"
        "exec \"${@//\\/var\\/lib\\//%s/var/lib/}\"\n" % (node, node))
    (bin_dir / "ansible-playbook").write_text("#!/usr/bin/env bash\necho \"$*\" >>%s\n" % calls)
    for tool in ("podman", "ansible-playbook"):
        (bin_dir / tool).chmod(0o755)
    return dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"])), calls


def test_a_node_is_provisioned_again_only_when_an_input_changed(lab_tree, tmp_path):
    env, calls = fake_tools(tmp_path)
    provision = [lab_tree / "tests" / "containers" / "provision-node.sh", "lab-x", "inventory"]

    def runs():
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    sh(provision, cwd=lab_tree, env=env)
    assert runs() == 1
    run = sh(provision, cwd=lab_tree, env=env)
    assert runs() == 1 and "lab: lab-x is provisioned from these inputs (%s)" % digest(lab_tree) in run.stdout
    group_vars = lab_tree / "inventory" / "group_vars" / "gpu_inference.yml"
    group_vars.write_text(group_vars.read_text().replace('gpufleet_lab_release: "0.5.23"',
                                                         'gpufleet_lab_release: "0.5.16"'))
    sh(provision, cwd=lab_tree, env=env)
    assert runs() == 2
    # A provisioning that fails leaves no stamp: the next run provisions again.
    (Path(env["PATH"].split(":")[0]) / "ansible-playbook").write_text("#!/usr/bin/env bash\necho \"$*\" >>%s\n"
                                                                      "exit 2\n" % calls)
    group_vars.write_text(group_vars.read_text() + "\n# changed\n")
    assert sh(provision, cwd=lab_tree, env=env, check=False).returncode == 2 and runs() == 3
    (Path(env["PATH"].split(":")[0]) / "ansible-playbook").write_text("#!/usr/bin/env bash\necho \"$*\" >>%s\n"
                                                                      % calls)
    sh(provision, cwd=lab_tree, env=env)
    assert runs() == 4
