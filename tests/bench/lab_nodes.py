"""What the benchmarks share: running a command, lab nodes as podman containers reached over SSH, and a lab fleet
behind the lab's gateway (GatewayLab)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The stand-in server's setting on a lab node, as the README's lab has it: its GPUs, the model, the drafter,
# the training job that holds the GPUs.
STANDIN_VARS = {
    "gpufleet_lab_gpus": "h100x8.gpus.csv", "sglang_dflash_launcher_module": "gpufleet_standin",
    "sglang_dflash_model_path": "/models/Qwen3.6-27B", "sglang_dflash_draft_model_path": "/models/Qwen3.6-27B-DFlash",
    "sglang_dflash_stop_units": ["train-qwen.service"],
}


def sh(argv, env=None, check=True):
    """Run argv; exit with its output when it fails (check)."""
    proc = subprocess.run([str(a) for a in argv], env=env, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        sys.exit("%s failed (rc %s):\n%s\n%s"
                 % (" ".join(map(str, argv[:4])), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def start_nodes(prefix, count, first_ssh_port, keys, env, first_api_port=None):
    """PREFIX00.. containers of the node image, SSH (and the server's port 30000, with first_api_port)
    published on 127.0.0.1 only; a container that exists is kept."""
    image = os.environ.get("GPUFLEET_NODE_IMAGE", "localhost/gpufleet-sglang-node:bookworm")
    names = []
    for i in range(count):
        name = "%s%02d" % (prefix, i)
        names.append(name)
        if sh(["podman", "container", "exists", name], env=env, check=False).returncode == 0:
            continue
        ports = ["-p", "127.0.0.1:%d:22" % (first_ssh_port + i)]
        if first_api_port:
            ports += ["-p", "127.0.0.1:%d:30000" % (first_api_port + i)]
        sh(["podman", "run", "-d", "--name", name, "--hostname", name, "--systemd=always"] + ports
           + ["-v", "%s/authorized_keys:/home/ops/.ssh/authorized_keys:ro" % keys, image, "/sbin/init"], env=env)
    return names


def lab_environment():
    """(env, keys): this venv's tools first on PATH, the lab's containers.conf, the node image built, the lab's SSH
    key pair, and the collection installed for ansible-playbook."""
    env = dict(os.environ, PATH="%s:%s" % (Path(sys.executable).parent, os.environ["PATH"]), ANSIBLE_NOCOLOR="1",
               CONTAINERS_CONF=str(REPO / "tests" / "containers" / "containers.conf"))
    # The kernel limits many systemd containers need (inotify instances), raised where they are low, said if so.
    print(sh([REPO / "tests" / "containers" / "lab-sysctl.sh"], env=env).stdout, end="")
    sh([REPO / "tests" / "containers" / "build-node-image.sh"], env=env)
    keys = sh([REPO / "tests" / "containers" / "lab-ssh-key.sh"], env=env).stdout.strip()
    env["ANSIBLE_COLLECTIONS_PATH"] = sh([REPO / "scripts" / "install-collection.sh", REPO / ".cache" / "collections"],
                                         env=env).stdout.strip()
    return env, keys


def write_inventory(path, hosts, keys, group_vars, ssh_args=""):
    """A JSON inventory of the group gpu_inference: HOSTS (name: host vars) reached as a fleet is, ops over SSH
    on 127.0.0.1 with the lab's key and become, and GROUP_VARS; SSH_ARGS are added to SSH's options."""
    common_args = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null" + (" " + ssh_args if ssh_args else "")
    group = {
        "ansible_host": "127.0.0.1", "ansible_user": "ops", "ansible_become": True,
        "ansible_ssh_private_key_file": "%s/id_ed25519" % keys, "ansible_pipelining": True,
        "ansible_ssh_common_args": common_args, "ansible_python_interpreter": "auto_silent",
    }
    group.update(group_vars)
    path.write_text(json.dumps({"all": {"children": {"gpu_inference": {"hosts": hosts, "vars": group}}}}))


class GatewayLab:
    """A lab fleet behind the lab's SMG (tests/traffic/lab-gateway.sh), and the lab's Prometheus
    (tests/traffic/lab-prometheus.sh) with prometheus_port: `hosts` nodes PREFIX00.. (SSH on first_ssh_port.., the
    server on first_api_port.., 127.0.0.1 only), provisioned as operators' boxes serving on 0.0.0.0, each the gateway's
    worker. As a context manager: everything started on entry (env, inventory, names, url, work set), stopped and
    removed on exit unless keep."""

    def __init__(self, prefix, hosts, ports, key, group_vars=None, keep=False):
        self.prefix, self.hosts, self.key, self.keep = prefix, hosts, key, keep
        self.first_ssh_port, self.first_api_port, self.gateway_port, self.prometheus_port = ports
        self.group_vars = dict(group_vars or {})
        self.url = "http://127.0.0.1:%d" % self.gateway_port
        self.env = self.inventory = self.work = None
        self.names = []
        self.gateway = [REPO / "tests" / "traffic" / "lab-gateway.sh"]
        self.prometheus = [REPO / "tests" / "traffic" / "lab-prometheus.sh"]

    def workers(self):
        return ["127.0.0.1:%d" % (self.first_api_port + i) for i in range(self.hosts)]

    def __enter__(self):
        self.env, keys = lab_environment()
        self.work = Path(tempfile.mkdtemp(prefix=self.prefix))
        self.names = start_nodes(self.prefix, self.hosts, self.first_ssh_port, keys, self.env, self.first_api_port)
        try:
            self._start(keys)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, keys):
        hosts = dict((name, {"ansible_port": self.first_ssh_port + i,
                             "sglang_dflash_gateway_worker_url": "http://127.0.0.1:%d" % (self.first_api_port + i)})
                     for i, name in enumerate(self.names))
        group = dict(STANDIN_VARS, gpufleet_lab_old_host="0.0.0.0", sglang_dflash_gateway_urls=[self.url],
                     sglang_dflash_gateway_token=self.key, sglang_dflash_drain_timeout=120)
        if self.prometheus_port:
            group.update(gpufleet_lab_enable_metrics=True,
                         sglang_dflash_prometheus_url="http://127.0.0.1:%d" % self.prometheus_port,
                         # SMG's metrics (--prometheus-port, the gateway's port + 10): its error rate.
                         sglang_dflash_canary_gateway_metrics_url="http://127.0.0.1:%d/metrics"
                         % (self.gateway_port + 10))
        group.update(self.group_vars)
        self.inventory = self.work / "hosts.json"
        write_inventory(self.inventory, hosts, keys, group)
        sh(["ansible", "-i", self.inventory, "all", "-f", "8", "-m", "ansible.builtin.wait_for_connection", "-a",
            "timeout=120"], env=self.env)
        sh(["ansible-playbook", "-i", self.inventory, "-f", "8", REPO / "tests" / "containers" / "provision.yml"],
           env=self.env)
        sh(self.gateway + ["start", self.work / "gateway", self.gateway_port, self.key]
           + ["http://" + w for w in self.workers()], env=self.env)
        if self.prometheus_port:
            sh(self.prometheus + ["start", self.work / "prometheus", self.prometheus_port,
                                  "127.0.0.1:%d" % (self.gateway_port + 10)] + self.workers(), env=self.env)

    def __exit__(self, *_exc):
        if not self.keep:
            sh(self.gateway + ["stop", self.work / "gateway"], env=self.env, check=False)
            if self.prometheus_port:
                sh(self.prometheus + ["stop", self.work / "prometheus"], env=self.env, check=False)
            sh(["podman", "rm", "-f"] + self.names, env=self.env, check=False)
        shutil.rmtree(self.work, ignore_errors=True)
        return False
