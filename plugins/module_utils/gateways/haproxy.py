# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HAProxy: its Runtime API over the stats socket, for the servers of one backend.

One command per connection (HAProxy answers and closes). The socket is on the host that runs HAProxy: a
unix socket (`stats socket /run/haproxy/admin.sock mode 660 level admin`, Debian's default line) reached by
running the gateway steps there, or a TCP one (`stats socket ipv4@127.0.0.1:9999 level admin`). Measured
against HAProxy 2.6 (Debian 12):
- `show servers state BACKEND` lists each server with srv_name, srv_addr, srv_port, srv_op_state (0 down,
  1 starting, 2 running, 3 stopping) and srv_admin_state (bits: 0x01/0x02/0x04/0x20/0x40 maintenance,
  0x08/0x10 drain); "Can't find backend." for another name;
- `show stat -1 4 -1` is the servers' CSV: scur (sessions in flight) and qcur (queued) per pxname/svname;
- `set server BACKEND/SERVER state drain` stops new sessions and lets those in flight finish; `state maint`
  takes the server out entirely (no health check either); `state ready` puts it back, and the health check
  (if any) then marks it UP; `set server B/S addr IP port P` moves it. "No such server." for an unknown one;
- `show cli level` says user, operator or admin; changes need admin.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.base import Gateway, GatewayError

MAX_ANSWER_BYTES = 4 * 1024 * 1024
MAINT_BITS = 0x01 | 0x02 | 0x04 | 0x20 | 0x40
DRAIN_BITS = 0x08 | 0x10
OP_STATES = {0: "down", 1: "starting", 2: "ready", 3: "stopping"}


def socket_address(url):
    """(family, address) of a stats socket: unix:///path, /path, tcp://host:port or ipv4@host:port."""
    text = str(url or "").strip()
    if text.startswith("unix://"):
        text = text[len("unix://"):]
    if text.startswith("/"):
        return socket.AF_UNIX, text
    if text.startswith("ipv4@"):
        text = "tcp://" + text[len("ipv4@"):]
    if text.startswith("tcp://"):
        parts = urlsplit(text)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.hostname and port:
            return socket.AF_INET, (parts.hostname, port)
    return None, None


def runtime_command(url, command, timeout=10.0):
    """HAProxy's answer to one Runtime API command; OSError when the socket cannot be reached."""
    family, address = socket_address(url)
    conn = socket.socket(family, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(address)
        conn.sendall((command + "\n").encode("ascii"))
        chunks, size = [], 0
        while size < MAX_ANSWER_BYTES:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        conn.close()
    return b"".join(chunks).decode("utf-8", "replace")


def _host_port(worker_url):
    parts = urlsplit(str(worker_url or ""))
    try:
        return (parts.hostname or "").lower(), parts.port
    except ValueError:
        return (parts.hostname or "").lower(), None


def parse_servers_state(text):
    """[{field: value}] of `show servers state`'s lines (its header names the fields)."""
    fields, rows = None, []
    for line in text.splitlines():
        if line.startswith("# "):
            fields = line[2:].split()
        elif fields and line.strip() and not line.startswith("#"):
            rows.append(dict(zip(fields, line.split())))
    return rows


def parse_stat(text):
    """{(pxname, svname): {column: value}} of `show stat`'s CSV."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        return {}
    columns = lines[0][2:].split(",")
    out = {}
    for line in lines[1:]:
        if line.strip():
            row = dict(zip(columns, line.split(",")))
            out[(row.get("pxname"), row.get("svname"))] = row
    return out


def _int(value, default=0):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def server_status(row):
    admin = _int(row.get("srv_admin_state"))
    if admin & MAINT_BITS:
        return "maint"
    if admin & DRAIN_BITS:
        return "drain"
    return OP_STATES.get(_int(row.get("srv_op_state"), -1), "unknown")


class HAProxyGateway(Gateway):
    """The servers of one HAProxy backend, through the Runtime API."""

    kind = "haproxy"
    fields = {"backend": True}
    keeps_workers = True

    @classmethod
    def url_problem(cls, url):
        if socket_address(url)[0] is None:
            return ("a haproxy gateway's url must be its stats socket, unix:///run/haproxy/admin.sock (or the path "
                    "alone) or tcp://127.0.0.1:PORT, not %r" % (url,))
        return None

    @classmethod
    def connect(cls, declaration, token=None, timeout=10.0):
        return cls(declaration["url"], declaration["backend"], timeout=timeout)

    def __init__(self, url, backend, command=runtime_command, timeout=10.0, where=None):
        super(HAProxyGateway, self).__init__(url, timeout)
        self.backend = backend
        self.command = command
        self.where = where or socket.gethostname()

    @property
    def name(self):
        return "haproxy gateway %s (backend %s)" % (self.url, self.backend)

    def _ask(self, command):
        try:
            return self.command(self.url, command, self.timeout)
        except OSError as exc:
            raise GatewayError("%s cannot be reached on %s: %s: set the url of its sglang_dflash_gateways entry to "
                               "HAProxy's stats socket on that host (a `stats socket ... level admin` line of "
                               "haproxy.cfg), or sglang_dflash_gateway_delegate_to to the host that runs HAProxy"
                               % (self.name, self.where, getattr(exc, "strerror", None) or exc)) from None

    def _change(self, command):
        answer = self._ask(command).strip()
        if answer:  # HAProxy answers a change that worked with nothing
            raise GatewayError("%s refused `%s`: %s" % (self.name, command, answer.splitlines()[0]))

    def _servers(self):
        answer = self._ask("show servers state %s" % self.backend)
        if "Can't find backend" in answer:
            raise GatewayError("%s: HAProxy has no backend %r: set the backend of its sglang_dflash_gateways entry "
                               "to the backend that holds the fleet's servers" % (self.name, self.backend))
        if "Permission denied" in answer or "Unknown command" in answer:
            raise GatewayError("%s refused `show servers state`: %s" % (self.name, answer.strip()[:200]))
        return parse_servers_state(answer)

    def workers(self):
        rows = self._servers()
        stats = parse_stat(self._ask("show stat -1 4 -1")) if rows else {}
        out = []
        for row in rows:
            stat = stats.get((self.backend, row.get("srv_name"))) or {}
            status = server_status(row)
            out.append({"id": "%s/%s" % (self.backend, row.get("srv_name")),
                        "url": "http://%s:%s" % (_url_host(row.get("srv_addr")), row.get("srv_port")),
                        "fqdn": row.get("srv_fqdn") if row.get("srv_fqdn") not in (None, "-") else None,
                        "status": status, "in_rotation": status == "ready",
                        "in_flight": _int(stat.get("scur")) + _int(stat.get("qcur")) if stat else None})
        return out

    def find(self, worker_url):
        host, port = _host_port(worker_url)
        return next((w for w in self.workers() if _host_port(w["url"])[1] == port
                     and host in (_host_port(w["url"])[0], (w.get("fqdn") or "").lower())), None)

    def check(self, worker_url, allow_missing=False):
        level = self._ask("show cli level").strip()
        if level != "admin":
            raise GatewayError("%s: the stats socket's level is %s, not admin: HAProxy would refuse to drain a "
                               "server; set `level admin` on its `stats socket` line in haproxy.cfg"
                               % (self.name, level or "unknown"))
        worker = self.find(worker_url)
        if worker is None and not allow_missing:
            servers = self.workers()
            host, port = _host_port(worker_url)
            raise GatewayError("%s has no server at %s:%s (it has: %s): set sglang_dflash_gateway_worker_url to "
                               "the address and port of this host's `server` line in that backend"
                               % (self.name, host, port, ", ".join("%s %s" % (w["id"].split("/", 1)[1], w["url"])
                                                                   for w in servers) or "none"))
        return worker

    def stop_routing(self, worker):
        if worker["status"] in ("drain", "maint"):
            return
        self._change("set server %s state drain" % worker["id"])

    def left(self, worker_url):
        worker = self.find(worker_url)
        return worker is None or worker["status"] in ("drain", "maint")

    def park(self, worker):
        if worker["status"] != "maint":
            self._change("set server %s state maint" % worker["id"])

    def routed(self, worker):
        return worker is not None and worker["status"] not in ("drain", "maint")

    def route(self, worker_url, previous_url=None):
        worker = self.find(worker_url)
        if worker is None and previous_url:
            # The switch moved the server to another port: the backend's line follows it.
            worker = self.find(previous_url)
            if worker is not None:
                host, port = _host_port(worker_url)
                self._change("set server %s addr %s port %s" % (worker["id"], host, port))
        if worker is None:
            raise GatewayError("%s has no server at %s: set sglang_dflash_gateway_worker_url to the address and "
                               "port of this host's `server` line in that backend" % (self.name, worker_url))
        if worker["status"] in ("drain", "maint"):
            self._change("set server %s state ready" % worker["id"])
        return True


def _url_host(addr):
    return "[%s]" % addr if addr and ":" in addr else addr
