"""The lab's load generator: SGLang traffic through the gateway, counted request by request.

    python tests/traffic/loadgen.py --url http://127.0.0.1:30180 --clients 8 --duration 300 \
        --stop-file /tmp/stop --out result.json

Each client sends, in an order of its own (seeded by its number): a short /generate, a long streamed /generate (in
flight when a server stops), a short /v1/chat/completions and a long streamed one, each about as often: never a
fixed cycle, which a round-robin gateway over as many hosts would align with, sending every long stream to the same
host (one of two identical hosts ran 10 requests at once, the other 2). --drain-clients more clients send only
streamed chats of --drain-tokens tokens: streams still in flight whenever a host leaves rotation, so that its drain
has something to wait for (chats, whose events carry only the new text: a streamed /generate carries the whole text
and token ids at every step, SGLang's way, so a 6000-token one moves 200 MB through the gateway, and the lab would
measure JSON rather than the rollout). A request counts as failed
when it does not answer 200 with a complete body; a stream counts as failed when it ends without its final
`data: [DONE]`. Bounded: the target must be on the loopback range (this lab's own gateway), it stops after
--duration seconds or --max-requests requests or once --stop-file exists, and the requests in flight then finish.
"""

import argparse
import http.client
import ipaddress
import json
import os
import random
import statistics
import sys
import threading
import time
from urllib.parse import urlsplit

KINDS = (
    # (name, path, stream, tokens; None: --long-tokens)
    ("generate", "/generate", False, 16),
    ("generate_stream", "/generate", True, None),
    ("chat", "/v1/chat/completions", False, 16),
    ("chat_stream", "/v1/chat/completions", True, None),
)
MAX_DURATION_S = 1800
MAX_REQUESTS = 200000


def body(path, stream, tokens, model):
    if path == "/generate":
        return {"text": "The lab's load generator says hello.", "stream": stream,
                "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
    return {"model": model, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": tokens,
            "temperature": 0, "stream": stream}


def one_request(host, port, path, stream, tokens, model, headers, timeout=120):
    """(ok, problem): the whole exchange, read to its end."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body(path, stream, tokens, model)),
                     dict(headers, **{"Content-Type": "application/json"}))
        response = conn.getresponse()
        if response.status != 200:
            return False, "HTTP %d %s" % (response.status, response.read(200).decode("utf-8", "replace"))
        if not stream:
            answer = json.loads(response.read())
            if "text" not in answer and "choices" not in answer:
                return False, "answer without text or choices"
            return True, None
        last = None
        for raw in response:
            line = raw.strip()
            if line.startswith(b"data:"):
                last = line[5:].strip()
        if last != b"[DONE]":
            return False, "stream ended without data: [DONE] (last event %r)" % (last[:80] if last else None)
        return True, None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return False, "%s: %s" % (type(exc).__name__, exc)
    finally:
        conn.close()


class Counter(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.sent = 0
        self.by_kind = dict((k[0], {"ok": 0, "failed": 0}) for k in KINDS)
        self.latencies = []
        self.failures = []

    def take(self, limit):
        with self.lock:
            if self.sent >= limit:
                return False
            self.sent += 1
            return True

    def record(self, kind, ok, problem, seconds):
        with self.lock:
            self.by_kind[kind]["ok" if ok else "failed"] += 1
            self.latencies.append(seconds)
            if not ok and len(self.failures) < 50:
                self.failures.append({"kind": kind, "at": time.time(), "problem": problem})


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the gateway, http://127.0.0.1:PORT")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--max-requests", type=int, default=20000)
    parser.add_argument("--stop-file")
    parser.add_argument("--long-tokens", type=int, default=1000,
                        help="tokens of the long streamed requests (in flight when a server stops)")
    parser.add_argument("--drain-clients", type=int, default=0,
                        help="more clients that send only streamed chats of --drain-tokens tokens")
    parser.add_argument("--drain-tokens", type=int, default=2500,
                        help="tokens of those streams (2500: about 25 s on the stand-in before the switch)")
    parser.add_argument("--model", default="/models/Qwen3.6-27B")
    parser.add_argument("--api-key")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    target = urlsplit(args.url)
    host = target.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if target.scheme != "http" or not loopback:
        parser.error("--url must be http:// on the loopback range (the lab's own gateway), not %s" % args.url)
    if not 1 <= args.clients <= 64 or not 0 <= args.drain_clients <= 16 or not 0 < args.duration <= MAX_DURATION_S \
            or not 1 <= args.max_requests <= MAX_REQUESTS or not 1 <= args.drain_tokens <= 100000:
        parser.error("--clients 1-64, --drain-clients 0-16, --drain-tokens 1-100000, --duration up to %d s and "
                     "--max-requests up to %d" % (MAX_DURATION_S, MAX_REQUESTS))
    headers = {"Authorization": "Bearer %s" % args.api_key} if args.api_key else {}
    counter = Counter()
    deadline = time.monotonic() + args.duration

    def stopping():
        return time.monotonic() >= deadline or (args.stop_file and os.path.exists(args.stop_file))

    long_chat = [k for k in KINDS if k[0] == "chat_stream"][0]

    def client(number):
        order = random.Random(number)  # seeded: the same mix each run, in no cycle
        draining = number >= args.clients  # one of the --drain-clients
        while not stopping() and counter.take(args.max_requests):
            if draining:
                (name, path, stream, _tokens), tokens = long_chat, args.drain_tokens
            else:
                name, path, stream, tokens = order.choice(KINDS)
                tokens = tokens or args.long_tokens
            started = time.monotonic()
            ok, problem = one_request(host, target.port or 80, path, stream, tokens, args.model, headers)
            counter.record(name, ok, problem, time.monotonic() - started)

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients + args.drain_clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kinds = counter.by_kind
    streamed = [k[0] for k in KINDS if k[2]]
    result = {
        "requests": sum(v["ok"] + v["failed"] for v in kinds.values()),
        "failed": sum(v["failed"] for v in kinds.values()),
        "streamed": {"ok": sum(kinds[k]["ok"] for k in streamed), "failed": sum(kinds[k]["failed"] for k in streamed)},
        "non_streamed": {"ok": sum(kinds[k]["ok"] for k in kinds if k not in streamed),
                         "failed": sum(kinds[k]["failed"] for k in kinds if k not in streamed)},
        "by_kind": kinds,
        "p50_s": round(statistics.median(counter.latencies), 3) if counter.latencies else None,
        "p99_s": round(percentile(counter.latencies, 0.99), 3) if counter.latencies else None,
        "seconds": round(time.monotonic() - started, 1),
        "failures": counter.failures,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    print(text if not args.out else "requests=%(requests)d failed=%(failed)d p50_s=%(p50_s)s p99_s=%(p99_s)s" % result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
