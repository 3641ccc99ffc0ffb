"""What the collection ships and claims: the tarball's contents, galaxy.yml, meta/, the tested ansible-core range."""

import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tarball_names(ansible_env, tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    subprocess.run(["ansible-galaxy", "collection", "build", "--output-path", str(out), str(REPO)],
                   env=ansible_env, capture_output=True, text=True, check=True)
    (tarball,) = out.glob("gpufleet-sglang-*.tar.gz")
    with tarfile.open(tarball) as tar:
        return tar.getnames()


def test_the_tarball_holds_the_collection_and_nothing_else(tarball_names):
    for wanted in ("LICENSE", "README.md", "CHANGELOG.rst", "changelogs/changelog.yaml", "meta/runtime.yml",
                   "meta/execution-environment.yml", "meta/ee-requirements.txt", "meta/ee-bindep.txt",
                   "plugins/doc_fragments/attributes.py", "plugins/filter/sglang_redact.yml",
                   "roles/sglang_dflash/meta/argument_specs.yml", "tests/sanity/ignore-2.16.txt"):
        assert wanted in tarball_names, wanted
    unwanted = re.compile(r"(^|/)(\.ansible|\.cache|\.venv|\.git|\.pytest_cache|\.ruff_cache|__pycache__)(/|$)"
                          r"|^tests/output(/|$)|^fleet-report(/|$)|^ee(/|$)|^requirements(/|$)|^ansible-navigator\.log$|\.tar\.gz$|\.pyc$"
                          r"|^changelogs/\.plugin-cache\.yaml$")
    assert [n for n in tarball_names if unwanted.search(n)] == []


def test_galaxy_metadata_is_true():
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    assert galaxy["license_file"] == "LICENSE" and "license" not in galaxy
    license_text = (REPO / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in license_text and "Version 3, 29 June 2007" in license_text
    assert len(license_text) > 30000  # the full text, not a notice
    # No placeholders: there is no public home, so no URLs at all.
    for key in ("repository", "documentation", "homepage", "issues"):
        assert key not in galaxy, key
    assert "example.invalid" not in (REPO / "galaxy.yml").read_text()


def test_execution_environment_metadata_names_files_that_exist():
    ee = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    for kind in ("python", "system"):
        path = REPO / ee["dependencies"][kind]
        # Only comments: the controller side needs nothing beyond ansible-core.
        lines = path.read_text().splitlines()
        assert path.is_file() and all(not line.strip() or line.startswith("#") for line in lines)


def test_requires_ansible_is_what_the_versions_stage_tests():
    floor = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert floor == ">=2.16.0"
    matrix = [line for line in (REPO / "tests" / "sanity" / "ansible-core-matrix.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    dev_in = (REPO / "requirements" / "dev.in").read_text()
    project = re.search(r"^ansible-core==(\d+\.\d+)\.\d+$", dev_in, re.M).group(1)
    # Each release of the matrix has its venv's lock (scripts/update-locks.sh), pinning that very release.
    for version in matrix:
        lock = REPO / "requirements" / ("ansible-core-%s.txt" % version.rsplit(".", 1)[0])
        assert re.search(r"^ansible-core==%s \\$" % re.escape(version), lock.read_text(), re.M), lock
    minors = sorted({".".join(v.split(".")[:2]) for v in matrix} | {project},
                    key=lambda v: tuple(map(int, v.split("."))))
    # Every minor from the floor up to the project's is tested, each with its ignore file.
    assert minors == ["2.16", "2.17", "2.18", "2.19"]
    for minor in minors:
        assert (REPO / "tests" / "sanity" / ("ignore-%s.txt" % minor)).is_file(), minor
