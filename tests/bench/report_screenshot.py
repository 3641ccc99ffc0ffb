"""A screenshot of the HTML fleet report at fleet size, for the README (docs/fleet-report-120.png).

    .venv/bin/python tests/bench/report_screenshot.py [--hosts 120] [--out docs/fleet-report-120.png]

The rows are the ones tests/integration/test_fleet_report_html.py renders (ready, blocked, unreachable hosts,
every switch state, two GPU models, one host whose interpreter is gone), as many as --hosts; the playbook's own
template renders them through Ansible and headless Chromium takes the picture (the top of the page, where the
summary and the first groups are).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "integration"))

from helpers import collections_root  # noqa: E402
from test_fleet_report_html import TEMPLATE, chromium, row  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=120)
    parser.add_argument("--out", default=str(REPO / "docs" / "fleet-report-120.png"))
    parser.add_argument("--size", default="1600,1400", help="the browser window, WIDTH,HEIGHT")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="report-shot-"))
    try:
        rows = [row(i) for i in range(args.hosts)]
        for i, r in enumerate(rows):
            r["host"] = "gpu-%03d" % i
        (work / "rows.json").write_text(json.dumps({"sglang_fleet_rows": rows}))
        play = [{"hosts": "localhost", "gather_facts": False, "tasks": [{
            "name": "Render the report", "ansible.builtin.template": {
                "src": str(TEMPLATE), "dest": str(work / "fleet-report.html"), "mode": "0644"}}]}]
        (work / "play.yml").write_text(json.dumps(play))
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root()), ANSIBLE_NOCOLOR="1")
        subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "@%s" % (work / "rows.json"),
                        "-e", "ansible_python_interpreter=%s" % sys.executable, str(work / "play.yml")],
                       env=env, check=True, capture_output=True)
        raw = work / "raw.png"
        chromium("--screenshot=%s" % raw, "--window-size=%s" % args.size, (work / "fleet-report.html").as_uri())
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(raw, out)
        print("%s: %d hosts, %d bytes" % (out, args.hosts, out.stat().st_size))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
