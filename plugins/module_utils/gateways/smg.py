# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SMG (the SGLang Model Gateway, formerly sglang-router): its admin API over HTTP.

What SMG 1.13.0 does, as measured against it (see the README of the lab): GET /workers lists
{id, url, status: pending|ready|not_ready|draining, is_healthy, load}; DELETE /workers/{id} answers 202 and
stops routing to the worker at once ("draining"), then drops it from the list about 5 s later; a POST
/workers {"url": ...} for a URL still listed is refused with 409 WORKER_ALREADY_EXISTS, and one for a URL
whose addition is pending with 409 WORKER_CREATE_IN_PROGRESS; an added worker is listed once it is ready.
There is no way to stop routing to a worker and keep it listed. The admin API takes
`Authorization: Bearer <key>` (401 for a missing or wrong key, 403 for a key without the admin role).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url
from ansible_collections.gpufleet.sglang.plugins.module_utils import metrics_text
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.base import Gateway, GatewayError

MAX_BODY_BYTES = 4 * 1024 * 1024
# SMG's responses by status code on its Prometheus port (--prometheus-port), the canary's error rate through it.
RESPONSES_METRIC = "smg_http_responses_total"


def error_ratio(first, last):
    """Share of the gateway's responses in the window that were errors (5xx, 429), from two scrapes of SMG's
    /metrics (smg_http_responses_total by status_code); None without responses."""
    def by_status(text):
        counts = {}
        for name, labels, value in metrics_text.parse_samples(text):
            if name == RESPONSES_METRIC:
                code = labels.get("status_code", "")
                counts[code] = counts.get(code, 0.0) + value
        return counts
    before, after = by_status(first), by_status(last)
    total = errors = 0.0
    for code, value in after.items():
        delta = value - before.get(code, 0.0)
        delta = value if delta < 0 else delta
        total += delta
        if code.startswith("5") or code == "429":
            errors += delta
    return round(errors / total, 4) if total else None


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


def _load(worker):
    load = worker.get("load")
    return load if isinstance(load, int) and not isinstance(load, bool) else None


class SMGGateway(Gateway):
    """One SMG's admin API."""

    kind = "smg"

    def __init__(self, url, token=None, request=http_request, timeout=10.0):
        super(SMGGateway, self).__init__(url, timeout)
        self.token = token
        self.request = request

    @classmethod
    def url_problem(cls, url):
        if not str(url).startswith(("http://", "https://")):
            return "an smg gateway's url must be http:// or https://, not %r" % (url,)
        return None

    @classmethod
    def connect(cls, declaration, token=None, timeout=10.0):
        return cls(declaration["url"], token, timeout=timeout)

    def _call(self, method, path, body=None):
        status, answer = self.request(method, self.url + path, self.token, body, self.timeout)
        if status == 0:
            raise GatewayError("%s cannot be reached: %s (sglang_dflash_gateway_urls)" % (self.name, answer))
        if status == 401:
            raise GatewayError("%s refused the token (401 %s): set sglang_dflash_gateway_token to an admin key "
                               "of the gateway (--control-plane-api-keys or --api-key)"
                               % (self.name, _error_text(answer).strip() or "unauthorized"))
        if status == 403:
            raise GatewayError("%s refused the token for changes (403 %s): the key needs the admin role"
                               % (self.name, _error_text(answer).strip()))
        return status, answer

    def workers(self):
        status, answer = self._call("GET", "/workers")
        if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("workers"), list):
            raise GatewayError("%s answered GET /workers with %s %s: is it an SGLang gateway (SMG)?"
                               % (self.name, status, _error_text(answer)))
        return [{"id": w.get("id"), "url": w.get("url"), "status": w.get("status"),
                 "in_rotation": w.get("status") == "ready" and bool(w.get("is_healthy", True)),
                 "in_flight": _load(w)} for w in answer["workers"]]

    def stop_routing(self, worker):
        if worker.get("status") == "draining":
            return  # a removal already under way
        status, answer = self._call("DELETE", "/workers/%s" % worker.get("id"))
        if status not in (200, 202, 204, 404):
            raise GatewayError("%s refused to remove worker %s: %s %s"
                               % (self.name, worker.get("url"), status, _error_text(answer)))

    def left(self, worker_url):
        return self.find(worker_url) is None

    def routed(self, worker):
        return worker is not None and worker.get("status") != "draining"

    def route(self, worker_url, previous_url=None):
        """True once the addition was accepted, False while the gateway still holds the URL (try again)."""
        worker = self.find(worker_url)
        if worker is not None:
            # Listed and not on its way out: an addition that was pending.
            return worker.get("status") != "draining"
        status, answer = self._call("POST", "/workers", {"url": worker_url})
        if status in (200, 201, 202):
            return True
        if status == 409:
            return False
        raise GatewayError("%s refused to add worker %s: %s %s"
                           % (self.name, worker_url, status, _error_text(answer)))
