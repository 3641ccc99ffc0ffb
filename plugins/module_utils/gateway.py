# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A worker in the SGLang gateway (SMG, the SGLang Model Gateway, formerly sglang-router): listed, taken
out of rotation, put back.

What SMG 1.13.0 does, as measured against it (see the README of the lab): GET /workers lists
{id, url, status: pending|ready|not_ready|draining, is_healthy}; DELETE /workers/{id} answers 202 and
stops routing to the worker at once ("draining"), then drops it from the list about 5 s later; a POST
/workers {"url": ...} for a URL still listed is refused with 409 WORKER_ALREADY_EXISTS, and one for a URL
whose addition is pending with 409 WORKER_CREATE_IN_PROGRESS; an added worker is listed once it is ready.
There is no way to stop routing to a worker and keep it listed. The admin API takes
`Authorization: Bearer <key>` (401 for a missing or wrong key, 403 for a key without the admin role).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

MAX_BODY_BYTES = 4 * 1024 * 1024


class GatewayError(Exception):
    """The gateway cannot do what was asked; the message says which gateway and what to set."""


def same_url(a, b):
    return str(a or "").strip().rstrip("/").lower() == str(b or "").strip().rstrip("/").lower()


def http_request(method, url, token=None, body=None, timeout=10.0):
    """(status, parsed JSON or text); status 0 and the reason when nothing answered."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = "Bearer %s" % token
    try:
        response = open_url(url, method=method, data=data, headers=headers, timeout=timeout, use_proxy=False,
                            validate_certs=True)
        status, raw = response.getcode(), response.read(MAX_BODY_BYTES)
    except HTTPError as exc:
        status, raw = exc.code, exc.read(MAX_BODY_BYTES) if exc.fp else b""
    except (URLError, OSError, ValueError) as exc:  # HTTPError is a URLError: it is caught first
        return 0, str(getattr(exc, "reason", exc))
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def _error_text(body):
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return "%s %s" % (error.get("code") or "", error.get("message") or "")
        return "%s %s" % (body.get("code") or "", error or body.get("message") or "")
    return str(body)[:300]


class Gateway(object):
    """One gateway's admin API."""

    def __init__(self, url, token=None, request=http_request, timeout=10.0):
        self.url = url.rstrip("/")
        self.token = token
        self.request = request
        self.timeout = timeout

    def _call(self, method, path, body=None):
        status, answer = self.request(method, self.url + path, self.token, body, self.timeout)
        if status == 0:
            raise GatewayError("gateway %s cannot be reached: %s (sglang_dflash_gateway_urls)" % (self.url, answer))
        if status == 401:
            raise GatewayError("gateway %s refused the token (401 %s): set sglang_dflash_gateway_token to an admin key "
                               "of the gateway (--control-plane-api-keys or --api-key)"
                               % (self.url, _error_text(answer).strip() or "unauthorized"))
        if status == 403:
            raise GatewayError("gateway %s refused the token for changes (403 %s): the key needs the admin role"
                               % (self.url, _error_text(answer).strip()))
        return status, answer

    def workers(self):
        status, answer = self._call("GET", "/workers")
        if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("workers"), list):
            raise GatewayError("gateway %s answered GET /workers with %s %s: is it an SGLang gateway (SMG)?"
                               % (self.url, status, _error_text(answer)))
        return answer["workers"]

    def find(self, worker_url):
        return next((w for w in self.workers() if same_url(w.get("url"), worker_url)), None)

    def remove(self, worker):
        status, answer = self._call("DELETE", "/workers/%s" % worker.get("id"))
        if status not in (200, 202, 204, 404):
            raise GatewayError("gateway %s refused to remove worker %s: %s %s"
                               % (self.url, worker.get("url"), status, _error_text(answer)))

    def add(self, worker_url):
        """True once the addition was accepted, False while the gateway still holds the URL (try again)."""
        status, answer = self._call("POST", "/workers", {"url": worker_url})
        if status in (200, 201, 202):
            return True
        if status == 409:
            return False
        raise GatewayError("gateway %s refused to add worker %s: %s %s"
                           % (self.url, worker_url, status, _error_text(answer)))


def _state(worker):
    if worker is None:
        return "not registered"
    if worker.get("status") == "ready" and worker.get("is_healthy", True):
        return "in rotation"
    return "out of rotation (%s)" % (worker.get("status") or "unknown")


def describe(gateways, worker_url):
    """[{gateway, state, status, id}] of a worker in each gateway, read-only; GatewayError when one fails."""
    out = []
    for gateway in gateways:
        worker = gateway.find(worker_url)
        out.append({"gateway": gateway.url, "state": _state(worker), "status": (worker or {}).get("status"),
                    "id": (worker or {}).get("id")})
    return out


def require_registered(gateways, worker_url):
    """describe(), or GatewayError naming the gateway that does not list the worker (and what it lists)."""
    states = []
    for gateway in gateways:
        workers = gateway.workers()
        worker = next((w for w in workers if same_url(w.get("url"), worker_url)), None)
        if worker is None:
            raise GatewayError("gateway %s does not list worker %s (it lists: %s): set "
                               "sglang_dflash_gateway_worker_url to the URL the gateway knows this host by"
                               % (gateway.url, worker_url, ", ".join(str(w.get("url")) for w in workers) or "none"))
        states.append({"gateway": gateway.url, "state": _state(worker), "status": worker.get("status"),
                       "id": worker.get("id")})
    return states


def take_out(gateways, worker_url, timeout, dry_run=False, clock=time.monotonic, sleep=time.sleep, poll=0.5):
    """Remove the worker from every gateway and wait until none lists it.

    Returns {changed, removed_from: [gateway urls], seconds}. Idempotent: a worker no gateway lists is left so.
    """
    started = clock()
    removed = []
    for gateway in gateways:
        worker = gateway.find(worker_url)
        if worker is None:
            continue
        removed.append(gateway.url)
        if not dry_run and worker.get("status") != "draining":
            gateway.remove(worker)
    if not dry_run:
        for gateway in gateways:
            while gateway.find(worker_url) is not None:
                if clock() - started > timeout:
                    raise GatewayError("gateway %s still lists worker %s %ss after its removal"
                                       % (gateway.url, worker_url, timeout))
                sleep(poll)
    return {"changed": bool(removed), "removed_from": removed, "seconds": round(clock() - started, 2)}


def put_back(gateways, worker_url, timeout, dry_run=False, clock=time.monotonic, sleep=time.sleep, poll=0.5):
    """Add the worker to every gateway that lacks it and wait until each lists it as ready.

    Returns {changed, added_to: [gateway urls], seconds}.
    """
    started = clock()
    added = []

    def expired():
        return clock() - started > timeout

    for gateway in gateways:
        worker = gateway.find(worker_url)
        if worker is not None and worker.get("status") != "draining":
            continue
        added.append(gateway.url)
        if dry_run:
            continue
        # A worker still draining out of the gateway (a removal under way) holds its URL: wait, then add.
        while True:
            if worker is not None and worker.get("status") != "draining":
                break  # listed again (an addition that was pending)
            if worker is None and gateway.add(worker_url):
                break
            if expired():
                raise GatewayError("gateway %s did not accept worker %s back within %ss (%s)"
                                   % (gateway.url, worker_url, timeout, _state(worker)))
            sleep(poll)
            worker = gateway.find(worker_url)
    if not dry_run:
        for gateway in gateways:
            while True:
                worker = gateway.find(worker_url)
                if worker is not None and _state(worker) == "in rotation":
                    break
                if expired():
                    raise GatewayError("gateway %s does not list worker %s as ready %ss after adding it (%s)"
                                       % (gateway.url, worker_url, timeout, _state(worker)))
                sleep(poll)
    return {"changed": bool(added), "added_to": added, "seconds": round(clock() - started, 2)}
