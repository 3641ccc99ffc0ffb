"""The recorded fixture of EnvironmentFile cases (tests/fixtures/envfile/systemd.json) is what a real systemd hands
a process today: record.py runs every case again in the lab's systemd image, and the reader gives the same."""

import json
import subprocess

from helpers import FIXTURES, REPO


def test_systemd_still_gives_what_the_fixture_recorded(tmp_path):
    (REPO / ".cache").mkdir(exist_ok=True)
    # The same lock as tests/molecule.sh: one build of the image, whoever asks first.
    subprocess.run(["flock", str(REPO / ".cache" / "lab-prepare.lock"), "tests/containers/build-image.sh"],
                   cwd=REPO, check=True, capture_output=True, timeout=900)
    fresh = tmp_path / "systemd.json"
    subprocess.run(["python3", str(FIXTURES / "envfile" / "record.py"), str(fresh)], cwd=REPO, check=True,
                   capture_output=True, timeout=300)
    recorded = json.loads((FIXTURES / "envfile" / "systemd.json").read_text())
    assert json.loads(fresh.read_text()) == recorded
