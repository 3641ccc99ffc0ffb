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
  that drafter (a drafter trained for another target accepts 1.4-3 tokens per step, a matching one 6+).

POST /generate answers like SGLang's native API, with SIMULATED speed: no model runs. Each decoding
step takes GPUFLEET_STANDIN_STEP_MS (10 ms); a speculative step (draft + verify) takes 1.3 steps and
yields the acceptance length in tokens: the drafter's file, else 2.6 for NEXTN/EAGLE-style algorithms
(the typical figure for 4 draft tokens) and 6.0 for DFLASH/DDTREE. The server really sleeps that long,
so a client measures real time. meta_info carries completion_tokens, e2e_latency, spec_verify_ct and
spec_accept_length as 0.5.11-0.5.23 compute them (completion_tokens / spec_verify_ct), and
/server_info's internal_states[0] the running avg_spec_accept_length, as the real server does.
/server_info also lists the *names* of the environment variables the process got (never values), so
a test can see that the unit's Environment= and EnvironmentFile= reached the server.
"""

import argparse
import importlib.metadata
import json
import math
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STARTUP_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_STARTUP_S", "1.0"))
STEP_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_STEP_MS", "10")) / 1000.0
SPECULATIVE_STEP_COST = 1.3
DEFAULT_ACCEPT_LENGTH = {"DFLASH": 6.0, "DDTREE": 6.0}
OTHER_SPECULATIVE_ACCEPT_LENGTH = 2.6


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
    info = {}
    accept_length = None  # None: no speculative decoding
    generate_error = None
    lock = threading.Lock()
    total_tokens = 0
    total_verify_steps = 0


def simulated_accept_length(algorithm, draft):
    """The acceptance length this server simulates (None without speculative decoding)."""
    if not algorithm:
        return None
    marker = os.path.join(draft or "", "GPUFLEET_STANDIN_ACCEPT_LENGTH")
    if draft and os.path.exists(marker):
        with open(marker) as handle:
            return max(1.0, float(handle.read().strip()))
    return DEFAULT_ACCEPT_LENGTH.get(str(algorithm).upper(), OTHER_SPECULATIVE_ACCEPT_LENGTH)


def generate(request):
    """A /generate answer after the SIMULATED decoding time (see the module docstring)."""
    params = request.get("sampling_params") or {}
    tokens = max(1, int(params.get("max_new_tokens") or 16))
    prompt = request.get("text") or ""
    started = time.monotonic()
    meta = {"id": "standin-%d" % int(started * 1e6), "finish_reason": {"type": "length", "length": tokens},
            "prompt_tokens": max(1, len(str(prompt).split())), "completion_tokens": tokens, "cached_tokens": 0}
    if State.accept_length is None:
        time.sleep(tokens * STEP_SECONDS)
    else:
        steps = int(math.ceil(tokens / State.accept_length))
        time.sleep(steps * STEP_SECONDS * SPECULATIVE_STEP_COST)
        meta.update(spec_verify_ct=steps, spec_accept_length=tokens / float(steps))
        with State.lock:
            State.total_tokens += tokens
            State.total_verify_steps += steps
    meta["e2e_latency"] = time.monotonic() - started
    return {"text": " lab" * tokens, "output_ids": list(range(tokens)), "meta_info": meta}


def server_info():
    info = dict(State.info)
    state = {"last_gen_throughput": 0.0}
    with State.lock:
        if State.total_verify_steps:
            state["avg_spec_accept_length"] = State.total_tokens / float(State.total_verify_steps)
    info["internal_states"] = [state]
    return info


class Handler(BaseHTTPRequestHandler):
    def _send(self, code, body):
        data = json.dumps(body, default=str).encode() if not isinstance(body, bytes) else body
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path in ("/health", "/health_generate", "/ready"):
            self._send(200 if State.ready else 503, b"" if State.ready else b'{"status": "loading"}')
        elif path in ("/server_info", "/get_server_info"):
            self._send(200, server_info())
        elif path in ("/model_info", "/get_model_info"):
            self._send(200, {"model_path": State.info.get("model_path"), "is_generation": True})
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": State.info.get("model_path"), "object": "model"}]})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802 (http.server's name)
        if self.path.split("?")[0] != "/generate":
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
        self._send(200, generate(request))

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
    log("simulated acceptance length: %s" % State.accept_length)
    failing = os.path.join(draft or "", "GPUFLEET_STANDIN_GENERATE_FAIL")
    if draft and os.path.exists(failing):
        with open(failing) as handle:
            State.generate_error = handle.read().strip() or "generation failed"
    server = ThreadingHTTPServer((settings.get("host") or "127.0.0.1", int(settings.get("port") or 30000)), Handler)
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
