"""HAProxy as a gateway kind (module_utils/gateways/haproxy.py), against a fake Runtime API that answers as HAProxy
2.6 (Debian 12) did: `show servers state`, `show stat`, `set server ... state|addr`, `show cli level`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import threading

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.haproxy import (
    HAProxyGateway,
    runtime_command,
    socket_address,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.seam import (
    GatewayError,
    connect,
    declarations,
    put_back,
    read,
    require_registered,
    take_out,
)

SOCKET = "unix:///run/haproxy/admin.sock"
WORKER = "http://127.0.0.1:31121"
HEADER = ("# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight "
          "srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state "
          "srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port "
          "srv_check_addr srv_agent_addr srv_agent_port")
ADMIN_BITS = {"ready": 0, "drain": 0x08, "maint": 0x01}


class FakeHAProxy(object):
    """One backend `sglang`; a drained server's sessions end one per `show stat`; READY is UP at once."""

    def __init__(self, servers, level="admin", sessions=2, reachable=True):
        self.servers = [{"name": n, "addr": a, "port": p, "admin": "ready", "scur": sessions}
                        for n, a, p in servers]
        self.level, self.reachable = level, reachable
        self.commands = []

    def __call__(self, url, command, timeout):
        self.commands.append(command)
        if not self.reachable:
            raise OSError(2, "No such file or directory")
        words = command.split()
        if command == "show cli level":
            return self.level + "\n"
        if words[:3] == ["show", "servers", "state"]:
            if words[3] != "sglang":
                return "Can't find backend.\n"
            lines = ["1", HEADER] + ["3 sglang %d %s %s 2 %d 1 1 5 6 3 4 6 0 0 0 - %d - 0 0 - - 0"
                                     % (i, s["name"], s["addr"], ADMIN_BITS[s["admin"]], s["port"])
                                     for i, s in enumerate(self.servers, 1)]
            return "\n".join(lines) + "\n\n"
        if command == "show stat -1 4 -1":
            for s in self.servers:
                if s["admin"] != "ready" and s["scur"]:
                    s["scur"] -= 1
            return "# pxname,svname,qcur,qmax,scur,status\n" + "".join(
                "sglang,%s,0,0,%d,UP\n" % (s["name"], s["scur"]) for s in self.servers)
        if words[:2] == ["set", "server"]:
            if self.level != "admin":
                return "Permission denied\n"
            name = words[2].split("/", 1)[1]
            server = next((s for s in self.servers if s["name"] == name), None)
            if server is None:
                return "No such server.\n"
            if words[3] == "state":
                server["admin"] = words[4]
            elif words[3] == "addr":
                server["addr"], server["port"] = words[4], int(words[6])
            return "\n"
        return "Unknown command.\n"

    def admin(self, name):
        return next(s["admin"] for s in self.servers if s["name"] == name)


def gateway(fake):
    return [HAProxyGateway(SOCKET, "sglang", command=fake, where="lb-1")]


def wait(**kw):
    return dict(sleep=lambda _s: None, **kw)


def test_drain_leaves_the_sessions_in_flight_then_maint_once_they_ended_then_ready():
    fake = FakeHAProxy([("traffic-1", "127.0.0.1", 31121), ("traffic-2", "127.0.0.1", 31122)], sessions=3)
    out = take_out(gateway(fake), WORKER, 10, park=False, **wait())
    assert out["changed"] and out["in_flight"] == 3 and fake.admin("traffic-1") == "drain"
    assert "set server sglang/traffic-1 state maint" not in fake.commands
    parked = take_out(gateway(fake), WORKER, 10, **wait())
    assert parked["changed"] and fake.admin("traffic-1") == "maint" and fake.admin("traffic-2") == "ready"
    # drain, then maint only once no session was left
    assert fake.servers[0]["scur"] == 0
    assert take_out(gateway(fake), WORKER, 10, **wait())["changed"] is False
    back = put_back(gateway(fake), WORKER, 10, **wait())
    assert back["changed"] and fake.admin("traffic-1") == "ready"
    assert put_back(gateway(fake), WORKER, 10, **wait())["changed"] is False


def test_a_server_that_moved_to_another_port_is_moved_in_the_backend():
    fake = FakeHAProxy([("traffic-1", "127.0.0.1", 31121)], sessions=0)
    take_out(gateway(fake), WORKER, 10, **wait())
    put_back(gateway(fake), "http://127.0.0.1:31999", 10, previous_url=WORKER, **wait())
    assert "set server sglang/traffic-1 addr 127.0.0.1 port 31999" in fake.commands
    assert fake.servers[0]["port"] == 31999 and fake.admin("traffic-1") == "ready"


def test_sessions_that_never_end_stop_the_park_naming_the_gateway_and_what_to_set():
    fake = FakeHAProxy([("traffic-1", "127.0.0.1", 31121)], sessions=10 ** 6)
    ticks = iter(range(1000))
    with pytest.raises(GatewayError, match=r"haproxy gateway unix:///run/haproxy/admin.sock \(backend sglang\) still "
                                           r"has requests in flight .* raise sglang_dflash_gateway_timeout"):
        take_out(gateway(fake), WORKER, 5, clock=lambda: next(ticks), **wait())
    assert fake.admin("traffic-1") == "drain"  # never MAINT with sessions in flight


@pytest.mark.parametrize("fake, backend, message", [
    (FakeHAProxy([], reachable=False), "sglang",
     "haproxy gateway unix:///run/haproxy/admin.sock (backend sglang) cannot be reached on lb-1: No such file or "
     "directory: set the url of its sglang_dflash_gateways entry to HAProxy's stats socket"),
    (FakeHAProxy([("traffic-2", "127.0.0.1", 31122)]), "sglang",
     "haproxy gateway unix:///run/haproxy/admin.sock (backend sglang) has no server at 127.0.0.1:31121 (it has: "
     "traffic-2 http://127.0.0.1:31122): set sglang_dflash_gateway_worker_url"),
    (FakeHAProxy([("traffic-1", "127.0.0.1", 31121)]), "other",
     "HAProxy has no backend 'other': set the backend of its sglang_dflash_gateways entry"),
    (FakeHAProxy([("traffic-1", "127.0.0.1", 31121)], level="operator"), "sglang",
     "the stats socket's level is operator, not admin"),
])
def test_the_preflight_names_the_gateway_the_host_and_what_to_set(fake, backend, message):
    with pytest.raises(GatewayError) as exc:
        require_registered([HAProxyGateway(SOCKET, backend, command=fake, where="lb-1")], WORKER)
    assert message in str(exc.value)
    assert not [c for c in fake.commands if c.startswith("set ")]


def test_the_preflight_names_every_gateway_that_cannot_take_the_host_out():
    missing = HAProxyGateway("/nowhere/admin.sock", "sglang", command=FakeHAProxy([], reachable=False), where="lb")
    other = HAProxyGateway(SOCKET, "sglang", command=FakeHAProxy([("t2", "127.0.0.1", 31122)]), where="lb")
    with pytest.raises(GatewayError) as exc:
        require_registered([missing, other], WORKER)
    assert "/nowhere/admin.sock (backend sglang) cannot be reached" in str(exc.value)
    assert "has no server at 127.0.0.1:31121" in str(exc.value)


def test_declarations_and_socket_addresses():
    declared, problems = declarations([{"kind": "HAProxy", "url": "ipv4@127.0.0.1:9999", "backend": "sglang"}],
                                      ["http://gw:30180/"])
    assert problems == [] and declared == [{"kind": "smg", "url": "http://gw:30180"},
                                           {"kind": "haproxy", "url": "ipv4@127.0.0.1:9999", "backend": "sglang"}]
    assert socket_address("ipv4@127.0.0.1:9999") == (socket.AF_INET, ("127.0.0.1", 9999))
    assert socket_address("tcp://127.0.0.1:9999")[1] == ("127.0.0.1", 9999)
    assert socket_address("/run/haproxy/admin.sock") == (socket.AF_UNIX, "/run/haproxy/admin.sock")
    assert socket_address("unix:///run/haproxy/admin.sock")[1] == "/run/haproxy/admin.sock"
    assert socket_address("lb:9999") == (None, None)
    assert isinstance(connect(declared[1]), HAProxyGateway)


def test_read_states_every_worker_and_keeps_the_error_of_a_gateway_it_cannot_read(tmp_path):
    got = read([{"kind": "haproxy", "url": str(tmp_path / "none.sock"), "backend": "sglang"}])
    assert got[0]["workers"] is None and "cannot be reached" in got[0]["error"]
    assert got[0]["key"] == "haproxy %s sglang" % (tmp_path / "none.sock")


def test_runtime_command_over_a_real_unix_socket(tmp_path):
    """One command per connection, the answer read until HAProxy closes it."""
    path = str(tmp_path / "admin.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    got = []

    def answer():
        conn = server.accept()[0]
        got.append(conn.recv(1024))
        conn.sendall(b"admin\n")
        conn.close()

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        assert runtime_command("unix://" + path, "show cli level", 5) == "admin\n"
    finally:
        thread.join(5)
        server.close()
        os.unlink(path)
    assert got == [b"show cli level\n"]
