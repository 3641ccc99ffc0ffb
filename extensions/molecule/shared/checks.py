"""testinfra helpers shared by the scenarios' verifiers (imported via sys.path from each test)."""

import json
import shlex

SECRET = "hf_molecule_secret_value_42"
UNIT = "/etc/systemd/system/sglang.service"


def exec_start(host):
    line = next(x for x in host.file(UNIT).content_string.splitlines() if x.startswith("ExecStart="))
    return shlex.split(line[len("ExecStart="):])


def written_flags(host):
    return [a for a in exec_start(host) if a.startswith("--")]


def release_flags(host, python):
    """Every option string the installed release's own --help lists (run inside the node)."""
    out = host.check_output("cd /tmp && COLUMNS=250 %s -m sglang.launch_server --help 2>/dev/null" % python)
    flags = set()
    for line in out.splitlines():
        for word in line.replace(",", " ").replace("[", " ").replace("]", " ").split():
            if word.startswith("--"):
                flags.add(word.split("=")[0])
    return flags


def server_info(host, port=30000):
    return json.loads(host.check_output("curl -sf http://127.0.0.1:%d/server_info" % port))


def health_status(host, port=30000):
    return host.check_output("curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/health" % port)
