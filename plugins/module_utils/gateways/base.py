# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every gateway kind offers the collection (one class per kind: smg.py, haproxy.py).

A kind answers five questions and takes four orders, each in its own protocol:
- workers(): every worker it balances, as {id, url, status, in_rotation, in_flight} (in_flight: the requests it
  has in flight to that worker, None where the kind does not say);
- find(url): one of them, or None;
- stop_routing(worker): no new request reaches the worker, the requests in flight go on (the drain starts);
- left(url): whether the worker is out of rotation as the kind means it (SMG: no longer listed; HAProxy: in
  DRAIN or MAINT);
- park(worker): after the drain, out for good until put back (HAProxy: MAINT; SMG: nothing, it is gone);
- route(url, previous_url): in rotation again (SMG: added; HAProxy: READY, at the new address if it moved);
  False while the gateway still holds the worker (try again);
- check(url, allow_missing): the preflight, GatewayError naming the gateway and what to set unless the worker can
  be taken out and put back (allow_missing: a worker it does not list passes, one this collection took out).
Target-side and controller-side alike (the fleet report states rows with state()).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

IN_ROTATION = "in rotation"
NOT_REGISTERED = "not registered"


class GatewayError(Exception):
    """The gateway cannot do what was asked; the message names the gateway and what to set."""


def same_url(a, b):
    return str(a or "").strip().rstrip("/").lower() == str(b or "").strip().rstrip("/").lower()


def state(worker):
    """How the fleet report and the module name a worker's place: in rotation, out of rotation (why), not
    registered. One definition for every kind: a kind's workers() sets in_rotation."""
    if worker is None:
        return NOT_REGISTERED
    if worker.get("in_rotation"):
        return IN_ROTATION
    return "out of rotation (%s)" % (worker.get("status") or "unknown")


class Gateway(object):
    """The interface; see the module's docstring."""

    kind = None
    # The fields of a declaration beside kind and url, each with whether it is required.
    fields = {}
    # Whether a worker out of rotation stays listed (HAProxy keeps its server line; SMG forgets the worker).
    keeps_workers = False

    @classmethod
    def url_problem(cls, url):
        """Why url cannot be this kind's address (naming what it must be), or None."""
        raise NotImplementedError

    @classmethod
    def connect(cls, declaration, token=None, timeout=10.0):
        """The gateway of a checked declaration ({kind, url, and this kind's fields})."""
        raise NotImplementedError

    def __init__(self, url, timeout=10.0):
        self.url = str(url).rstrip("/")
        self.timeout = timeout

    @property
    def name(self):
        """How messages name this gateway."""
        return "gateway %s" % self.url

    def workers(self):
        raise NotImplementedError

    def find(self, worker_url):
        return next((w for w in self.workers() if same_url(w.get("url"), worker_url)), None)

    def check(self, worker_url, allow_missing=False):
        workers = self.workers()
        worker = next((w for w in workers if same_url(w.get("url"), worker_url)), None)
        if worker is None and not allow_missing:
            raise GatewayError("%s does not list worker %s (it lists: %s): set sglang_dflash_gateway_worker_url to "
                               "the URL the gateway knows this host by"
                               % (self.name, worker_url, ", ".join(str(w.get("url")) for w in workers) or "none"))
        return worker

    def stop_routing(self, worker):
        raise NotImplementedError

    def left(self, worker_url):
        raise NotImplementedError

    def park(self, worker):
        """Nothing by default: a kind that forgets its workers has nothing left to park."""

    def routed(self, worker):
        """Whether the worker is routed to, or on its way back (an addition pending): nothing to put back."""
        return worker is not None and worker.get("in_rotation")

    def route(self, worker_url, previous_url=None):
        raise NotImplementedError
