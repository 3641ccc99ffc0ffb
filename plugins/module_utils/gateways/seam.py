# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway seam: the gateways in front of the fleet, declared once, each spoken to in its own protocol (one
module per kind; __init__.py stays empty, as ansible-test's empty-init check asks of module_utils packages).

- declarations(): the inventory's gateways (sglang_dflash_gateways, and sglang_dflash_gateway_urls meaning SMG)
  checked and normalized, with a problem per bad entry; the role's settings and the modules use it alike;
- connect(): the Gateway of one declaration (base.py says what a kind offers; smg.py, haproxy.py);
- take_out / put_back / preflight / describe / read: the steps, the same for every kind.

A new kind: a module beside smg.py with a Gateway subclass (its kind, fields, url_problem, connect) and an entry in
KINDS.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.base import (  # noqa: F401 (re-exported)
    IN_ROTATION,
    GatewayError,
    state,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.haproxy import HAProxyGateway
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.smg import SMGGateway

# The registry of gateway kinds: kind -> its Gateway class (which says its declaration's fields, checks its url and
# connects). A new kind is a module beside smg.py and one entry here.
KINDS = dict((cls.kind, cls) for cls in (SMGGateway, HAProxyGateway))
DEFAULT_KIND = "smg"


def declarations(gateways=None, smg_urls=None):
    """([{kind, url, backend?}], problems) of the inventory's gateways; sglang_dflash_gateway_urls come first, as
    SMG gateways. Each problem names the variable, the entry and what to set."""
    problems, out = [], []
    smg_urls = [] if smg_urls is None else smg_urls
    if not isinstance(smg_urls, list) or not all(str(u).startswith(("http://", "https://")) for u in smg_urls):
        problems.append("sglang_dflash_gateway_urls must be a list of http:// or https:// URLs, not %r" % (smg_urls,))
    else:
        out.extend({"kind": "smg", "url": str(u).rstrip("/")} for u in smg_urls)
    gateways = [] if gateways is None else gateways
    if not isinstance(gateways, list):
        return out, problems + ["sglang_dflash_gateways must be a list of {kind, url, ...} mappings, not %r"
                                % (gateways,)]
    for number, entry in enumerate(gateways, 1):
        where = "sglang_dflash_gateways entry %d" % number
        if not isinstance(entry, dict) or not entry.get("url"):
            problems.append("%s must be a mapping with a url (and kind: %s), not %r"
                            % (where, " or ".join(KINDS), entry))
            continue
        kind = str(entry.get("kind") or DEFAULT_KIND).lower()
        if kind not in KINDS:
            problems.append("%s: kind must be %s, not %r" % (where, " or ".join(KINDS), entry.get("kind")))
            continue
        gateway_class = KINDS[kind]
        unknown = sorted(set(entry) - set(["kind", "url"]) - set(gateway_class.fields))
        missing = [k for k, required in gateway_class.fields.items() if required and not entry.get(k)]
        url_problem = gateway_class.url_problem(entry["url"])
        if unknown:
            problems.append("%s: a %s gateway takes no %s (it takes kind, url%s)"
                            % (where, kind, ", ".join(unknown), "".join(", " + k for k in gateway_class.fields)))
        if missing:
            problems.append("%s: set %s (the HAProxy backend that holds the fleet's servers)"
                            % (where, " and ".join(missing)))
        if url_problem:
            problems.append("%s: %s" % (where, url_problem))
        if not (unknown or missing or url_problem):
            declaration = {"kind": kind, "url": str(entry["url"]).rstrip("/") if kind == "smg" else str(entry["url"])}
            declaration.update((k, str(entry[k])) for k in gateway_class.fields if entry.get(k))
            out.append(declaration)
    return out, problems


def key(declaration):
    """One gateway's identity among the declarations (one HAProxy socket can serve several backends)."""
    return "%s %s%s" % (declaration.get("kind") or DEFAULT_KIND, declaration.get("url"),
                        " " + declaration["backend"] if declaration.get("backend") else "")


def connect(declaration, token=None, timeout=10.0):
    """The Gateway of one declaration, of the class its kind names."""
    return KINDS[declaration.get("kind") or DEFAULT_KIND].connect(declaration, token, timeout)


def read(declarations_, token=None, timeout=10.0):
    """[{kind, url, backend?, key, workers, error}] of every gateway, read-only; a gateway that cannot be read has
    its error and no workers (the fleet report shows it, the run goes on)."""
    out = []
    for declaration in declarations_:
        entry = dict(declaration, key=key(declaration), workers=None, error=None)
        try:
            workers = connect(declaration, token, timeout).workers()
            entry["workers"] = [dict(w, state=state(w)) for w in workers]
        except GatewayError as exc:
            entry["error"] = str(exc)
        out.append(entry)
    return out


def _where(gateway, worker):
    return {"gateway": gateway.url, "kind": gateway.kind, "state": state(worker),
            "status": (worker or {}).get("status"), "id": (worker or {}).get("id"),
            "in_flight": (worker or {}).get("in_flight")}


def describe(gateways, worker_url):
    """[{gateway, kind, state, status, id, in_flight}] of a worker in each gateway, read-only."""
    return [_where(gateway, gateway.find(worker_url)) for gateway in gateways]


def preflight(gateways, worker_url, allow_missing=False):
    """(states, problems): where each gateway that answered has the worker ([{gateway, kind, state, ...}], as
    describe()), and why each gateway that cannot take it out and put it back cannot, naming it and what to set.
    allow_missing: a gateway that answers but does not list the worker passes (a worker this collection took out in a
    run that was cut)."""
    states, problems = [], []
    for gateway in gateways:
        try:
            states.append(_where(gateway, gateway.check(worker_url, allow_missing)))
        except GatewayError as exc:
            problems.append(str(exc))
            try:
                # It answered and does not list the worker: that much is known; a gateway that did not answer is
                # not guessed at.
                states.append(_where(gateway, gateway.find(worker_url)))
            except GatewayError:
                pass
    return states, problems


def require_registered(gateways, worker_url, allow_missing=False):
    """describe() when every gateway can take the worker out and put it back; else GatewayError naming every
    gateway that cannot, and what to set."""
    states, problems = preflight(gateways, worker_url, allow_missing)
    if problems:
        raise GatewayError("; ".join(problems))
    return states


def _until(gateway, worker_url, done, what, timeout, started, clock, sleep, poll):
    """Until done(gateway, worker_url), or GatewayError(what(gateway, worker_url, timeout)) after timeout seconds
    from started."""
    while not done(gateway, worker_url):
        if clock() - started > timeout:
            raise GatewayError(what(gateway, worker_url, timeout))
        sleep(poll)


def _left(gateway, worker_url):
    return gateway.left(worker_url)


def _still_routed(gateway, worker_url, timeout):
    return "%s still routes to worker %s %ss after its removal" % (gateway.name, worker_url, timeout)


def _nothing_in_flight(gateway, worker_url):
    return not (gateway.find(worker_url) or {}).get("in_flight")


def _still_in_flight(gateway, worker_url, timeout):
    return ("%s still has requests in flight to worker %s %ss after it stopped routing to it: raise "
            "sglang_dflash_gateway_timeout" % (gateway.name, worker_url, timeout))


def _in_rotation(gateway, worker_url):
    return state(gateway.find(worker_url)) == IN_ROTATION


def _not_accepted(gateway, worker_url, timeout):
    where = state(gateway.find(worker_url))
    return "%s did not accept worker %s back within %ss (%s)" % (gateway.name, worker_url, timeout, where)


def _not_ready(gateway, worker_url, timeout):
    where = state(gateway.find(worker_url))
    return "%s does not list worker %s as ready %ss after adding it (%s)" % (gateway.name, worker_url, timeout, where)


def take_out(gateways, worker_url, timeout, park=True, dry_run=False, clock=time.monotonic, sleep=time.sleep,
             poll=0.5):
    """No new request reaches the worker through any gateway; with park, the requests in flight through a gateway
    that keeps its workers (HAProxy) finished, and the worker is out for good (MAINT) until put back.

    Returns {changed, changed_gateways, in_flight (requests the gateways had in flight to it when it left, where
    they say), seconds}. Idempotent: a worker out of every gateway is left so.
    """
    started = clock()
    changed, in_flight = [], None
    timing = (timeout, started, clock, sleep, poll)
    for gateway in gateways:
        worker = gateway.find(worker_url)
        if worker is None:
            continue
        leaving = not gateway.left(worker_url)
        parking = park and gateway.keeps_workers and worker.get("status") != "maint"
        if not (leaving or parking):
            continue
        changed.append(gateway.url)
        if leaving and worker.get("in_flight") is not None:
            in_flight = (in_flight or 0) + worker["in_flight"]
        if dry_run:
            continue
        if leaving:
            gateway.stop_routing(worker)
            _until(gateway, worker_url, _left, _still_routed, *timing)
        if parking:
            # MAINT only once nothing is in flight: a fleet's `on-marked-down shutdown-sessions` would cut them.
            _until(gateway, worker_url, _nothing_in_flight, _still_in_flight, *timing)
            gateway.park(gateway.find(worker_url))
    return {"changed": bool(changed), "changed_gateways": changed, "in_flight": in_flight,
            "seconds": round(clock() - started, 2)}


def put_back(gateways, worker_url, timeout, previous_url=None, dry_run=False, clock=time.monotonic,
             sleep=time.sleep, poll=0.5):
    """Route to the worker again through every gateway that does not, and wait until each has it in rotation.
    previous_url: where the worker was before the switch (a gateway that keeps its workers moves it).

    Returns {changed, changed_gateways, seconds}.
    """
    started = clock()
    changed = []
    timing = (timeout, started, clock, sleep, poll)

    def accepted(gateway, url):
        return gateway.route(url, previous_url)

    for gateway in gateways:
        if gateway.routed(gateway.find(worker_url)):
            continue
        changed.append(gateway.url)
        if not dry_run:
            # A worker still on its way out of SMG (a removal under way) holds its URL: wait, then add.
            _until(gateway, worker_url, accepted, _not_accepted, *timing)
    if not dry_run:
        for gateway in gateways:
            _until(gateway, worker_url, _in_rotation, _not_ready, *timing)
    return {"changed": bool(changed), "changed_gateways": changed, "seconds": round(clock() - started, 2)}
