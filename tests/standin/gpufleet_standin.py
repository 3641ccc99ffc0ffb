"""Test-only stand-in for `python -m sglang.launch_server` on machines without a GPU.

It parses its command line with the installed SGLang's own argument parser
(`ServerArgs.add_cli_args`), so a flag the release does not have fails exactly as the real
server would (argparse exit 2). Releases whose parser cannot be imported on a CPU-only machine
(their import chain needs CUDA-built torchvision or transformers) get a parser built from the
same release's source files by the collection's ast reader; the server says which it used.
Then it serves what the role checks: /health (503 while "loading", then 200), /server_info
(and the deprecated /get_server_info) with the parsed settings, /model_info and /v1/models.

A file GPUFLEET_STANDIN_PARSER saying "source" in the model directory (--model-path) makes it build the parser from
the source even where SGLang's imports: about 40 MB a server instead of 330 (tests/bench/fleet_bench.py serves a
hundred nodes on one machine).

A command line SGLang's own parser accepted once on this node is not parsed again: its settings are kept in
/var/cache/gpufleet-standin/ (by release, package path, command line and SGLANG* environment), and a later start
with the same ones reads them instead of importing SGLang (torch and all: about 4 s of CPU a start, most of the lab's
server starts are restarts with a command line seen before). A new command line, a flag the release does not have
included, is always parsed by the release's parser; /server_info's gpufleet_standin.parse_cached says which.

Failure knobs for the tests (simulated, set per drafter directory):
- a file GPUFLEET_STANDIN_CRASH makes the server exit while "loading weights", as a corrupt drafter
  would (under Restart= that is a crash loop);
- a file GPUFLEET_STANDIN_SERVER_INFO.json is merged into /server_info, so the server reports other
  settings than it was given (as a build that silently ignores a flag would);
- a file GPUFLEET_STANDIN_GENERATE_FAIL makes every POST /generate answer 500 with the file's text
  while /health answers 200 (a server that comes up and breaks on its first request);
- a file /run/gpufleet-standin/GENERATE_FAIL, looked at on every POST (not only at the start), makes every server
  of the node answer 500 with its text from then on, while /health answers 200 (a running server that breaks:
  the day-two probe that is refused);
- a file GPUFLEET_STANDIN_DEGENERATE makes every answer one word repeated (the degenerate greedy output a
  drafter can come with while its acceptance length looks high);
- a file GPUFLEET_STANDIN_SPEC_STOPS_AFTER (a count N) makes speculation stop by itself once the server has
  completed N requests (see "Speculation that silently stops" below).

POST /generate answers like SGLang's native API, with SIMULATED speed: no model runs. Each decoding
step takes GPUFLEET_STANDIN_STEP_MS (10 ms); a speculative step (draft + verify) takes the drafter's step cost
in plain steps and yields the drafter's acceptance length in tokens. The drafter's figures are files in its
directory (a number each; "13/9" is read as a fraction), given at the reference block size 16:
- GPUFLEET_STANDIN_ACCEPT_LENGTH: the SIMULATED mean acceptance length (default 6.0 for DFLASH/DDTREE, 2.6 for
  NEXTN/EAGLE-style algorithms, the typical figure for 4 draft tokens; a drafter trained for another target
  accepts 1.4-3 tokens per step, a matching one 6+);
- GPUFLEET_STANDIN_STEP_COST: the SIMULATED time of a speculative step in plain decoding steps (default 1.3). The
  drafter's decode speed is proportional to 1 / this at every load, so 13/9 (= 1.3 / 0.9) makes a drafter
  exactly 10 % slower than the default at every load (the lab's Qwen3.6-27B-DFlash-slow10);
- GPUFLEET_STANDIN_LOAD_GROWTH: how much slower the speculative step gets per extra running request (SIMULATED;
  default 0.1). With an acceptance length of 5.2 and 1.5 here, a drafter is 4x faster than no drafter at
  concurrency 1, slower from concurrency 4 on, and 0.16x at 32: it passes a probe of one client and loses
  under a fleet's load.
The server really sleeps that long, so a client measures real time; each step ends at the time the model gives
it, counted from the request's start (a late wake-up on a busy machine is caught up at the next step, not added
to every step), and the /metrics histograms observe the model's times, so the speed a probe measures and the
canary's figures are the model's on a contended lab machine too. Speed depends on the load and on the prompt's
language, as the upstream figures do (sglang#19952: DFlash 2.0x at concurrency 1, 1.14x at 32; z-lab/dflash#7:
acceptance about 6.4 on English prompts, 3.3 on Chinese ones): each step takes longer the more requests run at
once (plain decoding +3% per extra running request, a speculative step +GPUFLEET_STANDIN_LOAD_GROWTH), and a
prompt that is mostly not Latin script (Chinese, say) gets the drafter's acceptance length x 0.52 (at least 1).
One request's SIMULATED speed, in tokens per unloaded plain step, with c requests running:
acceptance / (step cost x (1 + load growth x (c - 1))); plain decoding: 1 / (1 + 0.03 x (c - 1)).

Block size (SIMULATED, DFLASH/DDTREE): the block B given by --speculative-dflash-block-size (else the drafter's
config.json block_size, else 16) scales the drafter's figures; block 16 keeps them as they are.
- acceptance x (1 - 0.8^B) / (1 - 0.8^16), at most B: a run of accepted tokens is cut at the block's end; the
  share follows a run in which each next drafted token is accepted with probability 0.8 (0.856 at block 8);
- step cost x (1 + 0.3 x B / 16) / 1.3: the 0.3 plain step that drafting and verifying a block of 16 adds to a
  step is proportional to the block (1.3 -> 1.15 at block 8);
- load growth x B / 16: each running request adds B tokens to verify, which becomes compute-bound under load
  (0.1 -> 0.05 at block 8).
So a drafter of acceptance 6.0 is 4.615 tokens per unloaded step at block 16 and 5.138 / 1.15 = 4.468 at block 8
(block 16 3.2 % faster) at concurrency 1, and 6.0 / (1.3 x 1.3) = 3.550 against 5.138 / (1.15 x 1.15) = 3.885 at
concurrency 4 (the lab's load: 16 clients over 4 servers): block 8 9.4 % faster (the same ratios at 6.4).

Noise (SIMULATED, on by default, seeded): real acceptance varies with the prompt and a step's time jitters.
- The verify steps of a request of T tokens: ceil(T / acceptance) (the deterministic figure) x m, rounded up or
  down to a whole step at random in proportion so that its mean stays ceil(T / acceptance) x m, kept within
  [ceil(T / B), T] (the request's acceptance within [1, B]); m is lognormal with mean 1 and sigma 0.15, so the
  request's acceptance T / steps has a coefficient of variation of about 15 % (17-18 % for requests of about 30
  tokens, whose steps are few and whole). The mean number of steps, and so the mean time and every average
  SGLang reports (tokens over verify steps), are the deterministic figures';
- each step's time x (1 + u), u uniform in [-0.052, 0.052] (standard deviation 3 %, mean 0).
The seed: GPUFLEET_STANDIN_SEED (an integer; other text is hashed), else one derived from the host name and the
port (sha256 of "host:port"): identical hosts draw different sequences, one host the same one at every start.
GPUFLEET_STANDIN_NOISE=0 in the environment, else a file GPUFLEET_STANDIN_NOISE containing 0 in the model
directory (--model-path; the lab writes it node-wide), switches the noise off: the figures are then exactly the
deterministic ones (GPUFLEET_STANDIN_NOISE=1 in the environment switches it on over the file).

Speculation that silently stops (SIMULATED; the server stays healthy and still says speculative_algorithm):
- POST (or GET) /release_memory_occupation then /resume_memory_occupation, body {"tags": [...]} or none (no tags:
  all; the loss needs "weights"), answered 200 `null` as 0.5.23 does: the draft weights are lost on resume
  (sglang PR #31674): from then on every verify step accepts one token and still costs a speculative step
  (slower than no drafter: the PR measured +25 % time), visible as meta_info spec_accept_length 1.0 and
  spec_accept_rate 0.0, the sglang:spec_accept_length gauge falling to 1.0 within RECENT_STEPS_S, and
  avg_spec_accept_length falling towards 1. SGLang asserts that the server is idle on release; not simulated;
- GPUFLEET_STANDIN_SPEC_STOPS_AFTER (N) does the same by itself to the requests that start after N completed;
- --disaggregation-mode decode with DFLASH/DDTREE runs no speculative step at all (sglang#36140, PR #34285):
  plain decoding speed, /server_info still says speculative_algorithm DFLASH (internal_states[0] too, with
  disaggregation_mode "decode"), but meta_info has no spec_* field (0.5.16 and 0.5.23 add them only when
  spec_verify_ct > 0), spec_verify_calls_total never appears, the spec gauges stay 0 and internal_states[0] has
  no avg_spec_accept_length (0.5.23 leaves it out while no verify step was counted).

The answer's words are picked by the prompt, the same with and without a drafter (as greedy decoding gives).
meta_info carries completion_tokens, e2e_latency, and on a finished request spec_verify_ct and spec_accept_length
as 0.5.11-0.5.23 compute them (completion_tokens / spec_verify_ct), with spec_accept_rate, spec_num_correct_drafts
(tokens - verify steps) and spec_num_proposed_drafts (verify steps x (draft tokens - 1)) as 0.5.16-0.5.23 name
them (0.5.6: spec_accept_token_num, spec_draft_token_num, and the spec_* fields even without a verify step);
/server_info's internal_states[0] has the server's settings and the running avg_spec_accept_length, as the real
server does. /server_info also lists the *names* of the environment variables the process got (never values),
so a test can see that the unit's Environment= and EnvironmentFile= reached the server.

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
inter_token_latency_seconds (as 0.5.23's observe_inter_token_latency: a step's tokens each counted at its time / its
tokens, its time added to the sum), with the release's buckets.

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
import fractions
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STARTUP_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_STARTUP_S", "1.0"))
# A knob a test sets on a running node (every server of it fails its generations while the file exists).
RUNTIME_GENERATE_FAIL = "/run/gpufleet-standin/GENERATE_FAIL"
STEP_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_STEP_MS", "10")) / 1000.0
# SIMULATED drafter figures at the reference block size (each a marker file in the drafter directory can change).
SPECULATIVE_STEP_COST = 1.3
DEFAULT_SPEC_LOAD_GROWTH = 0.1
DEFAULT_ACCEPT_LENGTH = {"DFLASH": 6.0, "DDTREE": 6.0}
OTHER_SPECULATIVE_ACCEPT_LENGTH = 2.6
DFLASH_FAMILY = ("DFLASH", "DDTREE")
# SIMULATED load effect: a step's time grows by this share per extra running request (plain decoding).
PLAIN_LOAD_GROWTH = 0.03
# SIMULATED language effect: a drafter's acceptance on a mostly non-Latin prompt (3.3 / 6.4, z-lab/dflash#7).
OTHER_LANGUAGE_ACCEPT_FACTOR = 0.52
# SIMULATED block-size model (module docstring): the block the drafter figures are given at, and the chance that
# the next drafted token of a run is accepted too, which sets how much of the acceptance a smaller block keeps.
REFERENCE_BLOCK_SIZE = 16
RUN_CONTINUES = 0.8
# SIMULATED noise (module docstring): the spread of a request's acceptance (lognormal sigma) and of a step's time.
ACCEPT_SPREAD = 0.15
STEP_JITTER_SD = 0.03
STEP_JITTER_HALF_WIDTH = STEP_JITTER_SD * math.sqrt(3.0)  # a uniform draw of this half-width has that deviation
# sglang 0.5.23's histogram buckets (metrics_collector.py).
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = TTFT_BUCKETS + (600, 1200, 1800, 2400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
               0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
RECENT_STEPS_S = 5.0
DRAIN_POLL_SECONDS = float(os.environ.get("GPUFLEET_STANDIN_DRAIN_POLL_S", "5"))
# The scheduler child: no SIGTERM handler of its own, killed by the kernel when the server dies.
SCHEDULER_CODE = (
    "import ctypes, signal, time\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "while True:\n"
    "    time.sleep(3600)\n"
)


# ---- The SIMULATED speed model: pure functions (tests/unit/test_standin_model.py) ----

# A drafter's figures at the block it runs with: mean acceptance length, a speculative step's cost in plain steps,
# the step's growth per extra running request, and the block (the most tokens one verify step can accept).
DrafterModel = collections.namedtuple("DrafterModel", "accept_length step_cost load_growth block_size")


def block_accept_length(accept_at_reference, block_size):
    """The acceptance at this block: the reference block's x the share a run of accepted tokens keeps when the
    block cuts it (each next token accepted with probability RUN_CONTINUES), at most the block, at least 1."""
    share = (1.0 - RUN_CONTINUES ** block_size) / (1.0 - RUN_CONTINUES ** REFERENCE_BLOCK_SIZE)
    return max(1.0, min(float(block_size), accept_at_reference * share))


def block_step_cost(cost_at_reference, block_size):
    """The speculative step's cost at this block: the default's draft-and-verify share (0.3 plain step at block
    16) is proportional to the block, and a drafter's own cost scales the same way."""
    overhead = SPECULATIVE_STEP_COST - 1.0
    return cost_at_reference * (1.0 + overhead * block_size / REFERENCE_BLOCK_SIZE) / SPECULATIVE_STEP_COST


def block_load_growth(growth_at_reference, block_size):
    """Each running request adds a block of tokens to verify: under load that work is compute-bound."""
    return growth_at_reference * block_size / float(REFERENCE_BLOCK_SIZE)


def drafter_at_block(accept_length, step_cost, load_growth, block_size):
    """The DrafterModel of a DFLASH/DDTREE drafter (figures at the reference block) run with this block."""
    if block_size == REFERENCE_BLOCK_SIZE:  # exactly the figures given, no float round trip
        return DrafterModel(min(float(block_size), accept_length), step_cost, load_growth, block_size)
    return DrafterModel(block_accept_length(accept_length, block_size), block_step_cost(step_cost, block_size),
                        block_load_growth(load_growth, block_size), block_size)


def step_factor(running, step_cost=None, load_growth=None):
    """A step's time in unloaded plain steps with `running` requests at once (step_cost None: plain decoding)."""
    others = max(0, running - 1)
    if step_cost is None:
        return 1.0 + PLAIN_LOAD_GROWTH * others
    return step_cost * (1.0 + load_growth * others)


def expected_speed(drafter, running):
    """One request's mean speed in tokens per unloaded plain step (plain decoding unloaded: 1.0)."""
    if drafter is None:
        return 1.0 / step_factor(running)
    return drafter.accept_length / step_factor(running, drafter.step_cost, drafter.load_growth)


def noise_seed(seed_text, host, port):
    """GPUFLEET_STANDIN_SEED when set (an integer, other text hashed), else a hash of host and port."""
    text = (seed_text or "").strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return int(hashlib.sha256((text or "%s:%s" % (host, port)).encode()).hexdigest()[:16], 16)


def noise_on(environment_value, model_marker_text):
    """The environment's GPUFLEET_STANDIN_NOISE, else the model directory's marker, else on."""
    for value in (environment_value, model_marker_text):
        if value is not None and value.strip():
            return value.strip().lower() not in ("0", "false", "no", "off")
    return True


def step_jitter(rng):
    """A step's time factor: 1 without noise, else uniform around 1 with STEP_JITTER_SD (mean exactly 1)."""
    if rng is None:
        return 1.0
    return 1.0 + rng.uniform(-STEP_JITTER_HALF_WIDTH, STEP_JITTER_HALF_WIDTH)


def verify_steps(tokens, accept_length, block_size, rng=None):
    """The verify steps of a request of `tokens` tokens: ceil(tokens / acceptance) without noise; with it, that
    x a lognormal factor of mean 1, rounded to a whole step at random so the mean stays, and kept so that the
    request's acceptance is within [1, block]. The mean is the deterministic figure, so every average of tokens
    over verify steps (what SGLang reports) and the mean time stay what they are without noise."""
    nominal = int(math.ceil(tokens / float(accept_length)))
    if rng is None or accept_length <= 1.0:
        return nominal
    factor = rng.lognormvariate(-ACCEPT_SPREAD ** 2 / 2.0, ACCEPT_SPREAD)
    exact = nominal * factor
    steps = int(math.floor(exact)) + (1 if rng.random() < exact - math.floor(exact) else 0)
    return min(tokens, max(int(math.ceil(tokens / float(block_size))), steps))


# A request's decoding: its tokens, its verify steps (0: no speculative step runs) and the cost and load growth
# of each of its steps (None: plain decoding steps).
RequestPlan = collections.namedtuple("RequestPlan", "tokens verify_steps step_cost load_growth")


def steps_of(plan):
    return plan.verify_steps or plan.tokens


class Speculation(object):
    """What this server's speculative decoding does now (SIMULATED): the drafter, whether its steps run at all
    (not on the decode side of PD disaggregation) and whether they still accept (the draft weights lost on a
    release/resume of the memory, or speculation stopping by itself after a number of requests)."""

    def __init__(self, drafter=None, decode_only=False, stops_after=None):
        self.drafter = drafter  # None: no speculative decoding
        self.runs_verify_steps = drafter is not None and not decode_only
        self.stops_after = stops_after
        self.completed = 0
        self.weights_released = False
        self.draft_weights_lost = False
        self.lock = threading.Lock()

    def release_memory(self, tags):
        if _frees_weights(tags):
            with self.lock:
                self.weights_released = True

    def resume_memory(self, tags):
        """The target's weights come back (SGLang restores them); the drafter's do not (sglang PR #31674)."""
        if _frees_weights(tags):
            with self.lock:
                self.draft_weights_lost = self.draft_weights_lost or self.weights_released
                self.weights_released = False

    def request_completed(self):
        with self.lock:
            self.completed += 1

    def accepting(self):
        """Do the verify steps still accept drafted tokens?"""
        with self.lock:
            stopped = self.stops_after is not None and self.completed >= self.stops_after
            return not (stopped or self.draft_weights_lost)

    def plan(self, tokens, accept_length, rng=None):
        """The RequestPlan of a request of `tokens` tokens at this prompt's acceptance length."""
        drafter = self.drafter
        if not self.runs_verify_steps:
            return RequestPlan(tokens, 0, None, None)
        if not self.accepting():  # every draft rejected: one token per verify step, at the speculative step's cost
            return RequestPlan(tokens, tokens, drafter.step_cost, drafter.load_growth)
        return RequestPlan(tokens, verify_steps(tokens, accept_length, drafter.block_size, rng),
                           drafter.step_cost, drafter.load_growth)


def _frees_weights(tags):
    """No tags means every memory type (0.5.23's GPU_MEMORY_ALL_TYPES), weights included."""
    return not tags or "weights" in tags


def spec_meta(tokens, verify_steps, draft_tokens, release):
    """The speculative fields of a finished request's meta_info, as this release computes them."""
    if release < (0, 5, 11):  # 0.5.6: always there, zero without a verify step
        meta = {"spec_accept_rate": 0.0, "spec_accept_length": 0, "spec_verify_ct": verify_steps}
        if verify_steps:
            proposed = verify_steps * (draft_tokens - 1)
            meta.update(spec_accept_rate=(tokens - verify_steps) / float(proposed) if proposed else 0.0,
                        spec_accept_length=tokens / float(verify_steps), spec_accept_token_num=tokens - verify_steps,
                        spec_draft_token_num=proposed)
        return meta
    proposed = verify_steps * (draft_tokens - 1)
    if not verify_steps or not proposed:  # 0.5.16, 0.5.23: only after a verify step
        return {}
    return {"spec_accept_rate": (tokens - verify_steps) / float(proposed),
            "spec_accept_length": tokens / float(verify_steps), "spec_num_correct_drafts": tokens - verify_steps,
            "spec_num_proposed_drafts": proposed, "spec_verify_ct": verify_steps}


def release_tuple(version):
    """(0, 5, 23) of "0.5.23": the leading numbers (a pre-release, dev or local suffix ignored)."""
    match = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(version))
    return tuple(int(n) for n in match.groups() if n is not None) if match else ()


class SchedulerGone(Exception):
    """The scheduler process died: the request in flight cannot finish."""


def log(message):
    sys.stderr.write("[gpufleet-standin] %s\n" % message)
    sys.stderr.flush()


def wants_source_parser(argv):
    """Whether the model directory (--model-path, read before any parser) holds a file GPUFLEET_STANDIN_PARSER that
    says "source": build the parser from the release's source without importing sglang (a tenth of the memory,
    for a bench that serves a hundred nodes on one machine)."""
    for i, word in enumerate(argv):
        path = word.split("=", 1)[1] if word.startswith("--model-path=") else (
            argv[i + 1] if word == "--model-path" and i + 1 < len(argv) else None)
        if path:
            try:
                with open(os.path.join(path, "GPUFLEET_STANDIN_PARSER")) as handle:
                    return handle.read().strip() == "source"
            except OSError:
                return False
    return False


def sglang_parser(from_source=False):
    """(parser, kind): SGLang's own parser when it imports (unless from_source), else one built from its source."""
    try:
        if from_source:
            raise ImportError("GPUFLEET_STANDIN_PARSER in the model directory asks for the source")
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
    release = ()
    speculation = Speculation()
    rng = None  # the SIMULATED noise's random.Random; None: no noise
    generate_error = None
    lock = threading.Lock()
    total_tokens = 0
    total_verify_steps = 0
    in_flight = 0
    scheduler = None
    ending_scheduler = False  # the server ends its scheduler itself (a drain done, or a crash at load)
    degenerate = False
    draft_tokens = 16
    metrics = None


def speculative_server():
    """Was the server started with a speculative algorithm (whether or not its steps run)?"""
    return State.speculation.drafter is not None


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
        if State.ending_scheduler:  # the server ended it itself and is exiting
            return
        log("scheduler exited with %s: the server kills itself (SIGQUIT handler, kill_process_tree)"
            % State.scheduler.returncode)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watchdog, daemon=True).start()


def end_scheduler():
    """End the scheduler before the server exits, as SGLang's kill_process_tree does. Left to its
    PR_SET_PDEATHSIG, it died beside the exit, and systemd in a container on a cgroup v1 host never heard that the
    unit's cgroup was empty: the unit stayed in stop-sigkill for its TimeoutStopSec (330 s)."""
    if State.scheduler is not None and State.scheduler.poll() is None:
        State.ending_scheduler = True  # not the scheduler's death the watchdog acts on
        State.scheduler.kill()
        State.scheduler.wait()


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
    end_scheduler()
    log("The server drained and exits")
    os._exit(0)


def other_language(text):
    """Is the prompt mostly not Latin script (Chinese, say)? Its letters are counted, not spaces or digits."""
    letters = [c for c in str(text or "") if c.isalpha()]
    return bool(letters) and sum(1 for c in letters if ord(c) > 0x24F) > 0.3 * len(letters)


def accept_length_for(prompt):
    """The SIMULATED mean acceptance length for this prompt (None without speculative decoding)."""
    drafter = State.speculation.drafter
    if drafter is None:
        return None
    if other_language(prompt):
        return max(1.0, drafter.accept_length * OTHER_LANGUAGE_ACCEPT_FACTOR)
    return drafter.accept_length


def plan_request(tokens, prompt=""):
    """This request's RequestPlan, its acceptance drawn now (SIMULATED noise)."""
    return State.speculation.plan(tokens, accept_length_for(prompt), State.rng)


def step_seconds(plan):
    """One step's SIMULATED time with the requests running now (1 running: the unloaded figure), jittered."""
    with State.lock:
        running = State.in_flight
    return STEP_SECONDS * step_factor(running, plan.step_cost, plan.load_growth) * step_jitter(State.rng)


def decode(plan, prompt="", streaming=False):
    """Yield the tokens produced so far after each simulated decoding step; SchedulerGone when it died.

    Each step is counted in /metrics (inter-token latency, the recent acceptance); the first one is the
    request's time to first token, and the end of the last one its end-to-end latency. At the end the
    request counts in avg_spec_accept_length and towards GPUFLEET_STANDIN_SPEC_STOPS_AFTER.
    """
    started = time.monotonic()
    tokens, steps = plan.tokens, steps_of(plan)
    per_step = tokens / float(steps)
    produced = 0
    due = started
    try:
        for step in range(1, steps + 1):
            step_s = step_seconds(plan)
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
            State.metrics.step(step_s, max(1, now - produced), plan.verify_steps > 0)
            if step == 1:
                State.metrics.first_token(due - started, streaming)
            produced = now
            yield now
    except (SchedulerGone, GeneratorExit, BrokenPipeError, ConnectionResetError):
        State.metrics.aborted()
        raise
    State.metrics.finished(due - started, tokens, prompt, plan.verify_steps, streaming)
    _count(tokens, plan.verify_steps)
    State.speculation.request_completed()


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

    def _observe(self, name, labels, buckets, value, times=1, total=None):
        """One observation of value (times of them at once, their sum total, as 0.5.23 observes a step's tokens)."""
        entry = self.histograms.setdefault((name, labels), {"buckets": buckets, "counts": [0] * len(buckets),
                                                            "sum": 0.0, "count": 0})
        for i, le in enumerate(buckets):
            if value <= le:
                entry["counts"][i] += times
        entry["sum"] += value * times if total is None else total
        entry["count"] += times

    def step(self, seconds, tokens, speculative):
        now = time.monotonic()
        with self.lock:
            # As 0.5.23's observe_inter_token_latency: each of the step's tokens at its time / its tokens, the sum
            # the step's time (so sum / count is the seconds per token).
            self._observe("sglang:inter_token_latency_seconds", (), ITL_BUCKETS, seconds / tokens, tokens, seconds)
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
            if speculative_server():  # 0 until a verify step is counted (and on the decode side of PD)
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


def marker_number(draft, name):
    """The number in the drafter directory's file `name` ("13/9" is read as a fraction); None without it."""
    path = os.path.join(draft or "", name)
    if not draft or not os.path.exists(path):
        return None
    with open(path) as handle:
        return float(fractions.Fraction(handle.read().strip()))


def drafter_block_size(settings, draft):
    """--speculative-dflash-block-size, else the drafter's config.json block_size (as SGLang takes it), else 16."""
    if settings.get("speculative_dflash_block_size"):
        return int(settings["speculative_dflash_block_size"])
    try:
        with open(os.path.join(draft or "", "config.json")) as handle:
            config = json.load(handle)
        block = (config.get("dflash_config") or {}).get("block_size") or config.get("block_size")
        return int(block) if block else REFERENCE_BLOCK_SIZE
    except (OSError, ValueError, TypeError, AttributeError):
        return REFERENCE_BLOCK_SIZE


def simulated_drafter(settings, draft):
    """The DrafterModel this server simulates (None without speculative decoding): the drafter directory's
    figures, else the defaults; a DFLASH/DDTREE drafter's at its block size."""
    algorithm = str(settings.get("speculative_algorithm") or "").upper()
    if not algorithm:
        return None
    accept = marker_number(draft, "GPUFLEET_STANDIN_ACCEPT_LENGTH")
    accept = max(1.0, accept if accept is not None else
                 DEFAULT_ACCEPT_LENGTH.get(algorithm, OTHER_SPECULATIVE_ACCEPT_LENGTH))
    cost = marker_number(draft, "GPUFLEET_STANDIN_STEP_COST")
    cost = max(0.0, cost if cost is not None else SPECULATIVE_STEP_COST)
    growth = marker_number(draft, "GPUFLEET_STANDIN_LOAD_GROWTH")
    growth = max(0.0, growth if growth is not None else DEFAULT_SPEC_LOAD_GROWTH)
    if algorithm in DFLASH_FAMILY:
        return drafter_at_block(accept, cost, growth, drafter_block_size(settings, draft))
    # NEXTN/EAGLE-style: a step verifies the draft tokens (the figures are for 4 of them), no block model.
    tokens = int(settings.get("speculative_num_draft_tokens") or REFERENCE_BLOCK_SIZE)
    return DrafterModel(min(float(tokens), accept), cost, growth, tokens)


def _request_tokens(params, default=16):
    return max(1, int(params.get("max_new_tokens") or params.get("max_tokens") or default))


def _meta(tokens, prompt, started, plan=None, done=True):
    """meta_info; the speculative figures on the finished request only, as SGLang computes them."""
    meta = {"id": "standin-%d" % int(started * 1e6), "prompt_tokens": max(1, len(str(prompt).split())),
            "completion_tokens": tokens, "cached_tokens": 0,
            "finish_reason": {"type": "length", "length": tokens} if done else None}
    if speculative_server() and plan is not None and done:
        meta.update(spec_meta(tokens, plan.verify_steps, State.draft_tokens, State.release))
    meta["e2e_latency"] = time.monotonic() - started
    return meta


def _count(tokens, steps):
    """avg_spec_accept_length's sums: the verify steps and the tokens they gave."""
    if speculative_server() and steps:
        with State.lock:
            State.total_tokens += tokens
            State.total_verify_steps += steps


# The SIMULATED answer: words picked by the prompt, the same with and without a drafter (greedy decoding).
VOCABULARY = ["the", "server", "answers", "each", "request", "with", "tokens", "that", "a", "small", "model", "drafts",
              "and", "a", "large", "model", "checks", "so", "that", "several", "tokens", "come", "out", "of", "one",
              "step", "while", "the", "output", "stays", "what", "greedy", "decoding", "gives"]


def answer(prompt, tokens, start=0):
    """Words start to `tokens` of this prompt's answer, each with its leading space (a stream's step sends only its
    new words: building the whole answer at every step made a 6000-token stream cost the stand-in 6 s of CPU)."""
    if State.degenerate:
        return " the" * (tokens - start)
    seed = sum(ord(c) for c in str(prompt)) % len(VOCABULARY)
    return "".join(" " + VOCABULARY[(seed + 7 * i) % len(VOCABULARY)] for i in range(start, tokens))


def _chat_prompt(request):
    return " ".join(str(m.get("content") or "") for m in request.get("messages") or [] if isinstance(m, dict))


def generate(request):
    """A /generate answer after the SIMULATED decoding time (see the module docstring)."""
    tokens = _request_tokens(request.get("sampling_params") or {})
    prompt = request.get("text") or ""
    started = time.monotonic()
    plan = plan_request(tokens, prompt)
    for _produced in decode(plan, prompt):
        pass
    return {"text": answer(prompt, tokens), "output_ids": list(range(tokens)),
            "meta_info": _meta(tokens, prompt, started, plan)}


def generate_stream(request):
    """The SSE events of a streamed /generate: cumulative text and output_ids, one event per step."""
    tokens = _request_tokens(request.get("sampling_params") or {})
    prompt = request.get("text") or ""
    started = time.monotonic()
    plan = plan_request(tokens, prompt)
    text, sent = "", 0
    for produced in decode(plan, prompt, streaming=True):
        done = produced == tokens
        text, sent = text + answer(prompt, produced, sent), produced
        yield {"text": text, "output_ids": list(range(produced)),
               "meta_info": _meta(produced, prompt, started, plan, done)}


def chat_completion(request, stream):
    """chat.completion (or its chunks when stream) as SGLang's OpenAI server answers."""
    tokens = _request_tokens(request, default=16)
    started = time.time()
    base = {"id": "chatcmpl-standin-%d" % int(started * 1e6), "created": int(started),
            "model": request.get("model") or State.info.get("served_model_name") or State.info.get("model_path")}
    prompt = _chat_prompt(request)
    plan = plan_request(tokens, prompt)
    if not stream:
        for _produced in decode(plan, prompt):
            pass
        return dict(base, object="chat.completion", choices=[{
            "index": 0, "message": {"role": "assistant", "content": answer(prompt, tokens)},
            "finish_reason": "length"}],
            usage={"prompt_tokens": 8, "completion_tokens": tokens, "total_tokens": 8 + tokens})

    def chunks():
        yield dict(base, object="chat.completion.chunk", choices=[{
            "index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        sent = 0
        for produced in decode(plan, prompt, streaming=True):
            yield dict(base, object="chat.completion.chunk", choices=[{
                "index": 0, "delta": {"content": answer(prompt, produced, sent)},
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


# What /server_info adds to the server's settings, left out of internal_states' resolved settings.
STANDIN_INFO_KEYS = ("version", "launch_command", "gpufleet_standin")


def server_info():
    """The settings, and internal_states[0] as 0.5.23's scheduler answers it: the resolved settings, the last
    throughput and, once a verify step was counted, the average acceptance length since the start."""
    info = dict(State.info)
    state = dict((k, v) for k, v in info.items() if k not in STANDIN_INFO_KEYS)
    state["last_gen_throughput"] = 0.0
    with State.lock:
        if State.total_verify_steps:
            state["avg_spec_accept_length"] = State.total_tokens / float(State.total_verify_steps)
    info["internal_states"] = [state]
    return info


def memory_occupation(path, request):
    """POST /release_memory_occupation, /resume_memory_occupation: SGLang's answer (None, JSON null) and the
    SIMULATED effect on the drafter (its weights lost on the resume, sglang PR #31674)."""
    tags = request.get("tags") if isinstance(request, dict) else None
    if path == "/release_memory_occupation":
        State.speculation.release_memory(tags)
    else:
        State.speculation.resume_memory(tags)
        if speculative_server() and not State.speculation.accepting():
            log("resume_memory_occupation: the draft weights were not restored; every draft is rejected (SIMULATED)")
    log("%s tags=%s" % (path.lstrip("/"), tags))
    return None


MEMORY_PATHS = ("/release_memory_occupation", "/resume_memory_occupation")


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

    def _body(self):
        """The request's JSON body ({} when empty), None when it is not JSON."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return None

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
        elif path in MEMORY_PATHS:  # SGLang routes GET and POST
            self.do_POST()
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path not in ("/generate", "/v1/chat/completions") + MEMORY_PATHS:
            self._send(404, {"detail": "Not Found"})
            return
        if not State.ready:
            self._send(503, {"error": "the server is still loading"})
            return
        if path in MEMORY_PATHS:
            self._send(200, memory_occupation(path, self._body() or {}))
            return
        failing = State.generate_error or runtime_generate_error()
        if failing:
            log(failing)
            self._send(500, {"error": {"message": failing, "type": "InternalServerError"}})
            return
        request = self._body()
        if request is None:
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


def runtime_generate_error():
    """The text of RUNTIME_GENERATE_FAIL while it exists (looked at on every POST), else None."""
    try:
        with open(RUNTIME_GENERATE_FAIL) as handle:
            return handle.read().strip() or "generation failed"
    except OSError:
        return None


def configure_speculation(settings, draft):
    """State.speculation, State.rng and State.draft_tokens from the settings, the drafter's and the model's files."""
    drafter = simulated_drafter(settings, draft)
    decode_only = (str(settings.get("disaggregation_mode") or "").lower() == "decode"
                   and str(settings.get("speculative_algorithm") or "").upper() in DFLASH_FAMILY)
    stops_after = marker_number(draft, "GPUFLEET_STANDIN_SPEC_STOPS_AFTER") if drafter else None
    State.speculation = Speculation(drafter, decode_only, None if stops_after is None else int(stops_after))
    State.draft_tokens = int(settings.get("speculative_num_draft_tokens") or (drafter.block_size if drafter else 16))
    model_marker = os.path.join(settings.get("model_path") or "", "GPUFLEET_STANDIN_NOISE")
    marker_text = None
    if os.path.exists(model_marker):
        with open(model_marker) as handle:
            marker_text = handle.read()
    State.rng, noise = None, "off"
    if noise_on(os.environ.get("GPUFLEET_STANDIN_NOISE"), marker_text):
        port = int(settings.get("port") or 30000)
        seed = noise_seed(os.environ.get("GPUFLEET_STANDIN_SEED"), socket.gethostname(), port)
        State.rng, noise = random.Random(seed), "on, seed %d" % seed
    if drafter is None:
        log("no speculative decoding; plain step +%s per extra running request" % PLAIN_LOAD_GROWTH)
    else:
        stops = ""
        if stops_after is not None:
            stops = ", stops after %d requests" % stops_after
        log("SIMULATED drafter: acceptance length %.4g, step cost %.4g, +%.4g per extra running request, block %d%s"
            % (drafter.accept_length, drafter.step_cost, drafter.load_growth, drafter.block_size, stops))
    if decode_only:
        log("disaggregation mode decode: %s runs no speculative step (SIMULATED, sglang#36140)"
            % settings.get("speculative_algorithm"))
    log("SIMULATED noise %s" % noise)


PARSE_CACHE_DIR = "/var/cache/gpufleet-standin"


def parse_cache_path(argv):
    """Where the settings SGLang's parser gave for this command line are kept (see the module docstring)."""
    try:
        package = os.path.dirname(importlib.util.find_spec("sglang").origin)
    except (AttributeError, ImportError, ValueError):
        return None
    environment = sorted((k, v) for k, v in os.environ.items() if k.startswith("SGLANG"))
    key = json.dumps([sglang_version(), package, argv, environment])
    return os.path.join(PARSE_CACHE_DIR, hashlib.sha256(key.encode()).hexdigest() + ".json")


def parsed_settings(argv):
    """(settings, parser kind, cached): the command line parsed by the release's parser, or its earlier parse."""
    source = wants_source_parser(argv)
    cache = None if source else parse_cache_path(argv)
    if cache:
        try:
            with open(cache) as handle:
                return json.load(handle), "sglang", True
        except (OSError, ValueError):
            pass
    parser, kind = sglang_parser(source)
    settings = vars(parser.parse_args(argv))  # exits 2 on a flag this release does not have
    if cache and kind == "sglang":
        try:
            os.makedirs(PARSE_CACHE_DIR, exist_ok=True)
            partial = "%s.%d.tmp" % (cache, os.getpid())  # two servers of a node may start at once
            with open(partial, "w") as handle:
                json.dump(settings, handle)
            os.replace(partial, cache)
        except (OSError, TypeError, ValueError):  # not writable, or a value JSON does not keep: parsed each time
            pass
    return settings, kind, False


def main(argv):
    settings, kind, cached = parsed_settings(argv)
    model = settings.get("model_path")
    if not model or not os.path.isdir(model):
        log("model path %r is not a directory" % model)
        return 1
    draft = settings.get("speculative_draft_model_path")
    version = sglang_version()
    log("sglang %s, parser: %s%s, speculative_algorithm=%s, draft=%s"
        % (version, kind, " (this command line's earlier parse)" if cached else "",
           settings.get("speculative_algorithm"), draft))
    State.info = dict(settings, version=version, launch_command=" ".join(["sglang serve"] + argv),
                      gpufleet_standin={"parser": kind, "parse_cached": cached, "pid": os.getpid(),
                                        "cwd": os.getcwd(),
                                        "environment_names": sorted(os.environ)})
    State.release = release_tuple(version)
    override = os.path.join(draft or "", "GPUFLEET_STANDIN_SERVER_INFO.json")
    if draft and os.path.exists(override):
        with open(override) as handle:
            State.info.update(json.load(handle))
        log("reporting simulated settings from %s" % override)
    State.metrics = Metrics()
    configure_speculation(settings, draft)
    State.degenerate = bool(draft and os.path.exists(os.path.join(draft, "GPUFLEET_STANDIN_DEGENERATE")))
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
        end_scheduler()
        return 1
    State.ready = True
    log("The server is fired up and ready to roll!")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
