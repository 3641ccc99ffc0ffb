"""tests/traffic/loadgen.py with its prompts in Chinese: the canary's traffic "in another language" (test e)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tests", "traffic"))

import loadgen  # noqa: E402

PROMPT = "请用三句话解释负载均衡器的作用，并举一个例子。"


def body(path, stream, tokens, model):
    if path == "/generate":
        return {"text": PROMPT, "stream": stream,
                "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
    return {"model": model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": tokens,
            "temperature": 0, "stream": stream}


loadgen.body = body

if __name__ == "__main__":
    sys.exit(loadgen.main())
