"""Test-only stand-in for `python -m sglang.launch_server` on machines without a GPU.

It parses its command line with the installed SGLang's own argument parser
(`ServerArgs.add_cli_args`), so a flag the release does not have fails exactly as the real
server would (argparse exit 2). Releases whose parser cannot be imported on a CPU-only machine
(their import chain needs CUDA-built torchvision or transformers) get a parser built from the
same release's source files by the collection's ast reader; the server says which it used.
Then it serves what the role checks: /health (503 while "loading", then 200), /server_info
(and the deprecated /get_server_info) with the parsed settings, /model_info and /v1/models.

Failure knobs for the tests (simulated, set per drafter directory):
- a file GPUFLEET_STANDIN_CRASH makes the server exit while "loading weights", as a corrupt drafter
  would (under Restart= that is a crash loop);
- a file GPUFLEET_STANDIN_SERVER_INFO.json is merged into /server_info, so the server reports other
  settings than it was given (as a build that silently ignores a flag would);
- a file GPUFLEET_STANDIN_GENERATE_FAIL makes every POST /generate answer 500 with the file's text
  while /health answers 200 (a server that comes up and breaks on its first request);
- a file GPUFLEET_STANDIN_ACCEPT_LENGTH (a number) sets the SIMULATED average acceptance length of
  that drafter (a drafter trained for another target accepts 1.4-3 tokens per step, a matching one 6+);
- a file GPUFLEET_STANDIN_DEGENERATE makes every answer one word repeated (the degenerate greedy output a
  drafter can come with while its acceptance length looks high);
- a file GPUFLEET_STANDIN_LOAD_GROWTH (a number) sets how much slower that drafter's speculative step gets per
  extra running request (SIMULATED; default 0.1). With an acceptance length of 5.2 and 1.5 here, a drafter is
  4x faster than no drafter at concurrency 1, slower from concurrency 4 on, and 0.16x at 32: it passes a probe
  of one client and loses under a fleet's load.

POST /generate answers like SGLang's native API, with SIMULATED speed: no model runs. Each decoding
step takes GPUFLEET_STANDIN_STEP_MS (10 ms); a speculative step (draft + verify) takes 1.3 steps and
yields the acceptance length in tokens: the drafter's file, else 2.6 for NEXTN/EAGLE-style algorithms
(the typical figure for 4 draft tokens) and 6.0 for DFLASH/DDTREE. The server really sleeps that long,
so a client measures real time; each step ends at the time the model gives it, counted from the request's
start (a late wake-up on a busy machine is caught up at the next step, not added to every step), and the
/metrics histograms observe the model's times, so the speed a probe measures and the canary's figures are
the model's on a contended lab machine too. Speed depends on the load and on the prompt's language, as the upstream
figures do (sglang#19952: DFlash 2.0x at concurrency 1, 1.14x at 32; z-lab/dflash#7: acceptance about 6.4 on
English prompts, 3.3 on Chinese ones): each step takes longer the more requests run at once (plain decoding
+3% per extra running request, a speculative step +GPUFLEET_STANDIN_LOAD_GROWTH), and a prompt that is mostly
not Latin script (Chinese, say) gets the drafter's acceptance length x 0.52 (at least 1). At concurrency 1 and
on an English prompt the figures are the same as before these effects. The answer's words are picked by the
prompt, the same with and without a drafter (as greedy decoding gives). meta_info carries completion_tokens,
e2e_latency, spec_verify_ct and spec_accept_length as 0.5.11-0.5.23 compute them (completion_tokens /
spec_verify_ct), and /server_info's internal_states[0] the running avg_spec_accept_length, as the real server does.
/server_info also lists the *names* of the environment variables the process got (never values), so
a test can see that the unit's Environment= and EnvironmentFile= reached the server.

Streaming and the OpenAI API as 0.5.23 answers them: POST /generate with "stream": true sends SSE events
`data: {"text", "output_ids", "meta_info"}` (cumulative text) one per decoding step and ends with
`data: [DONE]`; POST /v1/chat/completions answers a chat.completion, or with "stream": true
chat.completion.chunk events and `data: [DONE]`. GET /v1/loads answers the scheduler's load
(num_running_reqs, num_waiting_reqs). /metrics (only with --enable-metrics) answers SGLang 0.5.23's names and
labels (sglang/srt/observability/metrics_collector.py in the 0.5.23 wheel): the gauges sglang:num_running_reqs,
num_queue_reqs, gen_throughput, spec_accept_length and spec_accept_rate (speculative servers; the last few
seconds' steps); the counters sglang:generation_tokens_total and prompt_tokens_total (by is_streaming),
spec_verify_calls_total and num_aborted_requests_total (a request cut before its end); the histograms
sglang:time_to_first_token_seconds, e2e_request_latency_seconds (by is_streaming) and
inter_token_latency_seconds (one observation per step: its time / its tokens), with the release's buckets.

Shutdown as 0.5.23 does it (tokenizer_manager.py sigterm_watchdog, read from the wheel):
- the server runs a "scheduler" child process that installs no SIGTERM handler and dies with its parent
  (PR_SET_PDEATHSIG), and every decoding step needs it: a watchdog thread checks it every second and, when
  it died, kills the whole server at once (SIGKILL), as SGLang's SubprocessWatchdog and SIGQUIT handler do;
- SIGTERM to the main process marks the server as exiting: /health, /health_generate and /ready answer 503,
  new requests are still served, and every GPUFLEET_STANDIN_DRAIN_POLL_S seconds (5, as SGLang) the server
  looks whether a request is left; when none is, it ends the scheduler and exits 0.
So under systemd's default KillMode=control-group (SIGTERM to every process of the unit) the scheduler dies
at once and the requests in flight are cut; with KillMode=mixed (SIGTERM to the main process only) they
finish. A request cut this way gets its connection closed without an answer (or a stream without
`data: [DONE]`), as a client of a killed server sees it.
"""

import argparse
import collections
import importlib.metadata
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STARTUP_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_STARTUP_S", "1.0"))
STEP_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_STEP_MS", "10")) / 1000.0
SPECULATIVE_STEP_COST = 1.3
# SIMULATED load effect: a step's time grows by this share per extra running request (plain decoding / drafter).
PLAIN_LOAD_GROWTH = 0.03
DEFAULT_SPEC_LOAD_GROWTH = 0.1
# SIMULATED language effect: a drafter's acceptance on a mostly non-Latin prompt (3.3 / 6.4, z-lab/dflash#7).
OTHER_LANGUAGE_ACCEPT_FACTOR = 0.52
# sglang 0.5.23's histogram buckets (metrics_collector.py).
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = TTFT_BUCKETS + (600, 1200, 1800, 2400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
               0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
RECENT_STEPS_S = 5.0
DEFAULT_ACCEPT_LENGTH = {"DFLASH": 6.0, "DDTREE": 6.0}
OTHER_SPECULATIVE_ACCEPT_LENGTH = 2.6
DRAIN_POLL_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_DRAIN_POLL_S", "5"))
# The scheduler child: no SIGTERM handler of its own, killed by the kernel when the server dies.
SCHEDULER_CODE = (
    "import ctypes, signal, time\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "while True:\n"
    "    time.sleep(3600)\n"
)


class SchedulerGone(Exception):
    """The scheduler process died: the request in flight cannot finish."""


def log(message):
    sys.stderr.write("[gpufleet-standin] %s\n" % message)
    sys.stderr.flush()


def sglang_parser():
    """(parser, kind): SGLang's own parser when it imports, else one built from its source."""
    try:
        from sglang.srt.server_args import ServerArgs

        parser = argparse.ArgumentParser(prog="sglang serve")
        ServerArgs.add_cli_args(parser)
        return parser, "sglang"
    except Exception as exc:  # the real import chain needs more than this CPU box has
        log("sglang's parser does not import here (%s: %s); building it from the release's source"
            % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else ""))
    import importlib.util

    from gpufleet_argparse_source import flags_from_package

    package_dir = os.path.dirname(importlib.util.find_spec("sglang").origin)
    flags, _files = flags_from_package(package_dir)
    parser = argparse.ArgumentParser(prog="sglang serve")
    for flag in flags:
        names = [flag["name"]] + flag["aliases"]
        kwargs = {"dest": flag["name"].lstrip("-").replace("-", "_"), "default": None}
        if flag.get("hidden"):
            kwargs["help"] = argparse.SUPPRESS
        if flag.get("negated_by"):
            parser.add_argument(*names, action=argparse.BooleanOptionalAction, **kwargs)
        elif flag["takes_value"]:
            if flag.get("choices"):
                kwargs["choices"] = flag["choices"]
            parser.add_argument(*names, **kwargs)
        else:
            parser.add_argument(*names, action="store_true", **kwargs)
    return parser, "source"


def sglang_version():
    """From the distribution, or from version.py for a checkout on the path (no dist-info)."""
    try:
        return importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        from sglang.version import __version__

        return __version__


class State(object):
    ready = False
    exiting = False
    info = {}
    accept_length = None  # None: no speculative decoding
    generate_error = None
    lock = threading.Lock()
    total_tokens = 0
    total_verify_steps = 0
    in_flight = 0
    scheduler = None
    load_growth = DEFAULT_SPEC_LOAD_GROWTH
    degenerate = False
    draft_tokens = 16
    metrics = None


def scheduler_alive():
    return State.scheduler is None or State.scheduler.poll() is None


def gpu_claims():
    """The fake nvidia-smi's claims (gpufleet-holds-gpu=INDEX:MIB) of the GPUs CUDA_VISIBLE_DEVICES gives the server,
    when GPUFLEET_STANDIN_GPU_MIB sets how much each holds (SIMULATED: the multi-service lab's replicas)."""
    mib = os.environ.get("GPUFLEET_STANDIN_GPU_MIB")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if not mib:
        return []
    return ["gpufleet-holds-gpu=%s:%s" % (index.strip(), mib)
            for index in visible.split(",") if index.strip().isdigit()]


def start_scheduler():
    State.scheduler = subprocess.Popen([sys.executable, "-c", SCHEDULER_CODE] + gpu_claims())

    def watchdog():
        while State.scheduler.poll() is None:
            time.sleep(1.0)
        log("scheduler exited with %s: the server kills itself (SIGQUIT handler, kill_process_tree)"
            % State.scheduler.returncode)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watchdog, daemon=True).start()


def on_sigterm(_signum, _frame):
    if State.exiting:
        return
    State.exiting = True
    log("SIGTERM received. Draining requests and shutting down...")
    threading.Thread(target=drain_then_exit, daemon=True).start()


def drain_then_exit():
    while True:
        with State.lock:
            remaining = State.in_flight
        log("Gracefully exiting... Remaining number of requests %d" % remaining)
        if remaining == 0:
            break
        time.sleep(DRAIN_POLL_SECONDS)
    if State.scheduler is not None and State.scheduler.poll() is None:
        State.scheduler.kill()
    log("The server drained and exits")
    os._exit(0)


def other_language(text):
    """Is the prompt mostly not Latin script (Chinese, say)? Its letters are counted, not spaces or digits."""
    letters = [c for c in str(text or "") if c.isalpha()]
    return bool(letters) and sum(1 for c in letters if ord(c) > 0x24F) > 0.3 * len(letters)


def accept_length_for(prompt):
    """The SIMULATED acceptance length for this prompt (None without speculative decoding)."""
    if State.accept_length is None:
        return None
    if other_language(prompt):
        return max(1.0, State.accept_length * OTHER_LANGUAGE_ACCEPT_FACTOR)
    return State.accept_length


def step_seconds(speculative):
    """One step's SIMULATED time with the requests running now (1 running: the unloaded figure)."""
    with State.lock:
        others = max(0, State.in_flight - 1)
    if speculative:
        return STEP_SECONDS * SPECULATIVE_STEP_COST * (1.0 + State.load_growth * others)
    return STEP_SECONDS * (1.0 + PLAIN_LOAD_GROWTH * others)


def decoding_steps(tokens, prompt=""):
    """(tokens per step, steps) of a request of `tokens` tokens at the simulated speed."""
    length = accept_length_for(prompt)
    if length is None:
        return 1.0, tokens
    steps = int(math.ceil(tokens / length))
    return tokens / float(steps), steps


def decode(tokens, prompt="", streaming=False):
    """Yield the tokens produced so far after each simulated decoding step; SchedulerGone when it died.

    Each step is counted in /metrics (inter-token latency, the recent acceptance); the first one is the
    request's time to first token, and the end of the last one its end-to-end latency.
    """
    started = time.monotonic()
    per_step, steps = decoding_steps(tokens, prompt)
    speculative = State.accept_length is not None
    produced = 0
    due = started
    try:
        for step in range(1, steps + 1):
            step_s = step_seconds(speculative)
            # The simulated clock: each step ends when the model says (the sum of the steps so far), however
            # late the machine woke this thread for the previous one, so a busy lab machine adds one wake-up
            # to a request's time, not one per step, and the speed a client measures is the model's.
            due += step_s
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not scheduler_alive():
                raise SchedulerGone()
            now = min(tokens, int(round(step * per_step))) if step < steps else tokens
            State.metrics.step(step_s, max(1, now - produced), speculative)
            if step == 1:
                State.metrics.first_token(due - started, streaming)
            produced = now
            yield now
    except (SchedulerGone, GeneratorExit, BrokenPipeError, ConnectionResetError):
        State.metrics.aborted()
        raise
    State.metrics.finished(due - started, tokens, prompt, steps if speculative else 0, streaming)


class Metrics(object):
    """The counters and histograms /metrics answers (see the module docstring)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counters = {("sglang:num_aborted_requests_total", ()): 0.0}
        self.histograms = {}
        self.recent = collections.deque()  # (monotonic time, tokens) of each step of the last RECENT_STEPS_S seconds
        self.recent_tokens = 0
        self.last_accept = None

    def _inc(self, name, labels, amount=1.0):
        key = (name, labels)
        self.counters[key] = self.counters.get(key, 0.0) + amount

    def _observe(self, name, labels, buckets, value):
        entry = self.histograms.setdefault((name, labels), {"buckets": buckets, "counts": [0] * len(buckets),
                                                            "sum": 0.0, "count": 0})
        for i, le in enumerate(buckets):
            if value <= le:
                entry["counts"][i] += 1
        entry["sum"] += value
        entry["count"] += 1

    def step(self, seconds, tokens, speculative):
        now = time.monotonic()
        with self.lock:
            self._observe("sglang:inter_token_latency_seconds", (), ITL_BUCKETS, seconds / tokens)
            self._forget(now)
            self.recent.append((now, tokens))
            self.recent_tokens += tokens
            if speculative:
                self.last_accept = self.recent_tokens / float(len(self.recent))

    def _forget(self, now):
        """Drop the steps older than RECENT_STEPS_S (under the lock; cheap, so a step costs little CPU)."""
        while self.recent and now - self.recent[0][0] > RECENT_STEPS_S:
            self.recent_tokens -= self.recent.popleft()[1]

    def first_token(self, seconds, streaming):
        with self.lock:
            self._observe("sglang:time_to_first_token_seconds", (("is_streaming", _flag(streaming)),),
                          TTFT_BUCKETS, seconds)

    def finished(self, seconds, tokens, prompt, verify_steps, streaming):
        stream = (("is_streaming", _flag(streaming)),)
        with self.lock:
            self._observe("sglang:e2e_request_latency_seconds", stream, E2E_BUCKETS, seconds)
            self._inc("sglang:generation_tokens_total", stream, tokens)
            self._inc("sglang:prompt_tokens_total", stream, max(1, len(str(prompt).split())))
            if verify_steps:
                self._inc("sglang:spec_verify_calls_total", (), verify_steps)

    def aborted(self):
        with self.lock:
            self._inc("sglang:num_aborted_requests_total", ())

    def text(self, running):
        model = State.info.get("served_model_name") or State.info.get("model_path")
        scheduler = 'model_name="%s",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"' % model
        tokenizer = 'model_name="%s",engine_type="unified"' % model
        now = time.monotonic()
        with self.lock:
            self._forget(now)
            throughput = self.recent_tokens / RECENT_STEPS_S
            gauges = [("sglang:num_running_reqs", running), ("sglang:num_queue_reqs", 0),
                      ("sglang:gen_throughput", round(throughput, 2))]
            if State.accept_length is not None:
                length = self.last_accept or 0.0
                rate = (length - 1.0) / max(1, State.draft_tokens - 1) if length else 0.0
                gauges += [("sglang:spec_accept_length", round(length, 4)), ("sglang:spec_accept_rate", round(rate, 4))]
            lines = []
            for name, value in gauges:
                lines += ["# TYPE %s gauge" % name, "%s{%s} %s" % (name, scheduler, float(value))]
            for (name, labels), value in sorted(self.counters.items()):
                base = scheduler if name == "sglang:spec_verify_calls_total" else tokenizer
                lines += ["# TYPE %s counter" % name[:-len("_total")],
                          "%s{%s} %s" % (name, _labels(base, labels), float(value))]
            for (name, labels), entry in sorted(self.histograms.items()):
                base = _labels(tokenizer, labels)
                lines.append("# TYPE %s histogram" % name)
                for le, count in zip(entry["buckets"], entry["counts"]):
                    lines.append('%s_bucket{%s,le="%s"} %s' % (name, base, float(le), float(count)))
                lines.append('%s_bucket{%s,le="+Inf"} %s' % (name, base, float(entry["count"])))
                lines.append("%s_sum{%s} %s" % (name, base, entry["sum"]))
                lines.append("%s_count{%s} %s" % (name, base, float(entry["count"])))
        return "\n".join(lines) + "\n"


def _flag(value):
    return "true" if value else "false"


def _labels(base, extra):
    return ",".join([base] + ['%s="%s"' % item for item in extra])


def simulated_accept_length(algorithm, draft):
    """The acceptance length this server simulates (None without speculative decoding)."""
    if not algorithm:
        return None
    marker = os.path.join(draft or "", "GPUFLEET_STANDIN_ACCEPT_LENGTH")
    if draft and os.path.exists(marker):
        with open(marker) as handle:
            return max(1.0, float(handle.read().strip()))
    return DEFAULT_ACCEPT_LENGTH.get(str(algorithm).upper(), OTHER_SPECULATIVE_ACCEPT_LENGTH)


def _request_tokens(params, default=16):
    return max(1, int(params.get("max_new_tokens") or params.get("max_tokens") or default))


def _meta(tokens, prompt, started, steps=None, done=True):
    meta = {"id": "standin-%d" % int(started * 1e6), "prompt_tokens": max(1, len(str(prompt).split())),
            "completion_tokens": tokens, "cached_tokens": 0,
            "finish_reason": {"type": "length", "length": tokens} if done else None}
    if State.accept_length is not None and steps:
        meta.update(spec_verify_ct=steps, spec_accept_length=tokens / float(steps))
    meta["e2e_latency"] = time.monotonic() - started
    return meta


def _count(tokens, steps):
    if State.accept_length is not None and steps:
        with State.lock:
            State.total_tokens += tokens
            State.total_verify_steps += steps


# The SIMULATED answer: words picked by the prompt, the same with and without a drafter (greedy decoding).
VOCABULARY = ["the", "server", "answers", "each", "request", "with", "tokens", "that", "a", "small", "model", "drafts",
              "and", "a", "large", "model", "checks", "so", "that", "several", "tokens", "come", "out", "of", "one",
              "step", "while", "the", "output", "stays", "what", "greedy", "decoding", "gives"]


def answer(prompt, tokens):
    """The first `tokens` words of this prompt's answer, each with its leading space."""
    if State.degenerate:
        return " the" * tokens
    seed = sum(ord(c) for c in str(prompt)) % len(VOCABULARY)
    return "".join(" " + VOCABULARY[(seed + 7 * i) % len(VOCABULARY)] for i in range(tokens))


def _chat_prompt(request):
    return " ".join(str(m.get("content") or "") for m in request.get("messages") or [] if isinstance(m, dict))


def generate(request):
    """A /generate answer after the SIMULATED decoding time (see the module docstring)."""
    tokens = _request_tokens(request.get("sampling_params") or {})
    prompt = request.get("text") or ""
    started = time.monotonic()
    for _produced in decode(tokens, prompt):
        pass
    steps = decoding_steps(tokens, prompt)[1] if State.accept_length is not None else None
    _count(tokens, steps)
    return {"text": answer(prompt, tokens), "output_ids": list(range(tokens)),
            "meta_info": _meta(tokens, prompt, started, steps)}


def generate_stream(request):
    """The SSE events of a streamed /generate: cumulative text and output_ids, one event per step."""
    tokens = _request_tokens(request.get("sampling_params") or {})
    prompt = request.get("text") or ""
    started = time.monotonic()
    steps = decoding_steps(tokens, prompt)[1] if State.accept_length is not None else None
    for produced in decode(tokens, prompt, streaming=True):
        done = produced == tokens
        if done:
            _count(tokens, steps)
        yield {"text": answer(prompt, produced), "output_ids": list(range(produced)),
               "meta_info": _meta(produced, prompt, started, steps if done else None, done)}


def chat_completion(request, stream):
    """chat.completion (or its chunks when stream) as SGLang's OpenAI server answers."""
    tokens = _request_tokens(request, default=16)
    started = time.time()
    base = {"id": "chatcmpl-standin-%d" % int(started * 1e6), "created": int(started),
            "model": request.get("model") or State.info.get("served_model_name") or State.info.get("model_path")}
    prompt = _chat_prompt(request)
    if not stream:
        for _produced in decode(tokens, prompt):
            pass
        return dict(base, object="chat.completion", choices=[{
            "index": 0, "message": {"role": "assistant", "content": answer(prompt, tokens)},
            "finish_reason": "length"}],
            usage={"prompt_tokens": 8, "completion_tokens": tokens, "total_tokens": 8 + tokens})

    def chunks():
        yield dict(base, object="chat.completion.chunk", choices=[{
            "index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        sent = 0
        for produced in decode(tokens, prompt, streaming=True):
            yield dict(base, object="chat.completion.chunk", choices=[{
                "index": 0, "delta": {"content": answer(prompt, produced)[len(answer(prompt, sent)):]},
                "finish_reason": "length" if produced == tokens else None}])
            sent = produced
    return chunks()


def loads():
    with State.lock:
        running = State.in_flight
    return {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "version": State.info.get("version"), "accelerator": "standin (no GPU)", "num_accelerators": 0,
            "loads": [{"timestamp": time.time(), "dp_rank": 0, "num_running_reqs": running, "num_waiting_reqs": 0,
                       "max_running_requests": State.info.get("max_running_requests") or 48,
                       "token_usage": 0.0, "gen_throughput": 0.0, "cache_hit_rate": 0.0, "utilization": 0.0}]}


def metrics_text():
    with State.lock:
        running = State.in_flight
    return State.metrics.text(running)


def server_info():
    info = dict(State.info)
    state = {"last_gen_throughput": 0.0}
    with State.lock:
        if State.total_verify_steps:
            state["avg_spec_accept_length"] = State.total_tokens / float(State.total_verify_steps)
    info["internal_states"] = [state]
    return info


class Handler(BaseHTTPRequestHandler):
    def _send(self, code, body, content_type="application/json"):
        data = json.dumps(body, default=str).encode() if not isinstance(body, bytes) else body
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events):
        """Server-sent events, then `data: [DONE]`; the connection closes at the end (HTTP/1.0)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for event in events:
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path in ("/health", "/health_generate", "/ready"):
            up = State.ready and not State.exiting
            self._send(200 if up else 503, b"" if up or State.exiting else b'{"status": "loading"}')
        elif path in ("/server_info", "/get_server_info"):
            self._send(200, server_info())
        elif path in ("/model_info", "/get_model_info"):
            self._send(200, {"model_path": State.info.get("model_path"), "is_generation": True,
                             "served_model_name": State.info.get("served_model_name") or State.info.get("model_path"),
                             "tokenizer_path": State.info.get("model_path"), "model_type": "qwen3",
                             "architectures": ["Qwen3ForCausalLM"]})
        elif path == "/v1/models":
            name = State.info.get("served_model_name") or State.info.get("model_path")
            self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "sglang",
                                                         "root": name, "max_model_len": 32768}]})
        elif path == "/v1/loads":
            self._send(200, loads())
        elif path == "/metrics" and State.info.get("enable_metrics"):
            self._send(200, metrics_text().encode(), "text/plain; version=0.0.4")
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path not in ("/generate", "/v1/chat/completions"):
            self._send(404, {"detail": "Not Found"})
            return
        if not State.ready:
            self._send(503, {"error": "the server is still loading"})
            return
        if State.generate_error:
            log(State.generate_error)
            self._send(500, {"error": {"message": State.generate_error, "type": "InternalServerError"}})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {"error": "the request body is not JSON"})
            return
        with State.lock:
            State.in_flight += 1
        try:
            stream = bool(request.get("stream"))
            if path == "/generate":
                if stream:
                    self._stream(generate_stream(request))
                else:
                    self._send(200, generate(request))
            elif stream:
                self._stream(chat_completion(request, True))
            else:
                self._send(200, chat_completion(request, False))
        except SchedulerGone:
            # What a client of a killed server sees: the connection ends without (the rest of) an answer.
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with State.lock:
                State.in_flight -= 1

    def log_message(self, fmt, *args):
        pass


def main(argv):
    parser, kind = sglang_parser()
    args = parser.parse_args(argv)  # exits 2 on a flag this release does not have
    settings = vars(args)
    model = settings.get("model_path")
    if not model or not os.path.isdir(model):
        log("model path %r is not a directory" % model)
        return 1
    draft = settings.get("speculative_draft_model_path")
    version = sglang_version()
    log("sglang %s, parser: %s, speculative_algorithm=%s, draft=%s"
        % (version, kind, settings.get("speculative_algorithm"), draft))
    State.info = dict(settings, version=version, launch_command=" ".join(["sglang serve"] + argv),
                      gpufleet_standin={"parser": kind, "pid": os.getpid(), "cwd": os.getcwd(),
                                        "environment_names": sorted(os.environ)})
    override = os.path.join(draft or "", "GPUFLEET_STANDIN_SERVER_INFO.json")
    if draft and os.path.exists(override):
        with open(override) as handle:
            State.info.update(json.load(handle))
        log("reporting simulated settings from %s" % override)
    State.accept_length = simulated_accept_length(settings.get("speculative_algorithm"), draft)
    State.metrics = Metrics()
    growth = os.path.join(draft or "", "GPUFLEET_STANDIN_LOAD_GROWTH")
    if State.accept_length is not None and draft and os.path.exists(growth):
        with open(growth) as handle:
            State.load_growth = max(0.0, float(handle.read().strip()))
    State.degenerate = bool(draft and os.path.exists(os.path.join(draft, "GPUFLEET_STANDIN_DEGENERATE")))
    State.draft_tokens = int(settings.get("speculative_num_draft_tokens")
                             or settings.get("speculative_dflash_block_size") or 16)
    log("simulated acceptance length: %s, speculative step +%s per extra running request"
        % (State.accept_length, State.load_growth if State.accept_length is not None else PLAIN_LOAD_GROWTH))
    failing = os.path.join(draft or "", "GPUFLEET_STANDIN_GENERATE_FAIL")
    if draft and os.path.exists(failing):
        with open(failing) as handle:
            State.generate_error = handle.read().strip() or "generation failed"
    start_scheduler()
    signal.signal(signal.SIGTERM, on_sigterm)
    server = ThreadingHTTPServer((settings.get("host") or "127.0.0.1", int(settings.get("port") or 30000)), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log("listening on %s:%s, loading weights" % server.server_address[:2])
    time.sleep(STARTUP_SECONDS)
    if draft and os.path.exists(os.path.join(draft, "GPUFLEET_STANDIN_CRASH")):
        log("RuntimeError: failed to load draft weights from %s: checksum mismatch in model.safetensors" % draft)
        return 1
    State.ready = True
    log("The server is fired up and ready to roll!")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
