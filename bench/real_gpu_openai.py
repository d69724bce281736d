#!/usr/bin/env python3
"""vLLM's own OpenAI server on the real GPU, as the `vllm` serving mode starts it (issue #43); run by
bench/real_gpu_openai.sh on the device, from the checkout's root.

    python bench/real_gpu_openai.py args OUT.json                 # the server's argument list, from its parser
    python bench/real_gpu_openai.py template TOKENIZER_DIR        # give a stand-in tokenizer a chat template
    python bench/real_gpu_openai.py argv VERSION_DIR ARGS.json MODEL PORT OUT.json   # the mode's command line
    python bench/real_gpu_openai.py client BASE_URL MODEL OUT.json   # the official `openai` client's answers
    python bench/real_gpu_openai.py table OPENAI.json TRITON.json     # both paths' load figures side by side

`args` imports vLLM (the device's, with the kit's packages on PYTHONPATH) and walks the parser that
`python3 -m vllm.entrypoints.openai.api_server` builds: every option's strings, destination, whether it takes a
value, how many, and its choices. `argv` renders the command line with tritonops' own mode
(tritonops/modes/vllm_server.py), checked against the list `args` just wrote. `table` is pure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A chat template of our own for the word-level stand-in tokenizer: each message as "role: content", then the
# assistant's turn. Its words are plain words of any vocabulary, so the prompt stays a few tokens long.
CHAT_TEMPLATE = ("{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def capture_arguments(out: str) -> int:
    import vllm
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # the same two calls as the server module's __main__
    parser = make_arg_parser(FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server."))
    options = []
    for action in parser._actions:  # noqa: SLF001 - argparse keeps no public list of its actions
        if isinstance(action, argparse._HelpAction):  # noqa: SLF001
            continue
        choices = action.choices
        options.append({
            "dest": action.dest,
            "flags": list(action.option_strings),
            "takes_value": action.nargs != 0,
            "nargs": action.nargs if isinstance(action.nargs, (int, str)) else None,
            "action": type(action).__name__,
            "choices": sorted(str(c) for c in choices) if choices is not None else None,
            "default": _jsonable(action.default),
        })
    doc = {"vllm_version": vllm.__version__,
           "parser": "vllm.entrypoints.openai.cli_args.make_arg_parser(FlexibleArgumentParser(...)), as "
                     "vllm.entrypoints.openai.api_server's __main__ builds it",
           "options": options}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    print(f"vLLM {vllm.__version__}: {len(options)} options of the OpenAI server")
    return 0


def add_template(tokenizer_dir: str) -> int:
    path = os.path.join(tokenizer_dir, "tokenizer_config.json")
    with open(path) as f:
        config = json.load(f)
    config["chat_template"] = CHAT_TEMPLATE
    with open(path, "w") as f:
        json.dump(config, f, indent=1)
    return 0


def render_argv(version_dir: str, args_json: str, model: str, port: str, out: str) -> int:
    sys.path.insert(0, REPO)
    from tritonops.modes.vllm_server import ServerArguments, server_argv

    with open(os.path.join(version_dir, "model.json")) as f:
        engine_args = json.load(f)
    with open(args_json) as f:
        arguments = ServerArguments.from_json(json.load(f))
    # the repository's relative folders (dummy weights: config.json only; the stand-in tokenizer) made absolute,
    # as production's model.json has them
    weights = os.path.abspath(os.path.join(version_dir, engine_args.pop("model")))
    if "tokenizer" in engine_args:
        engine_args["tokenizer"] = os.path.abspath(os.path.join(version_dir, engine_args["tokenizer"]))
    argv = server_argv(model, weights, engine_args, int(port), arguments)
    with open(out, "w") as f:
        json.dump({"engine_args": engine_args, "argv": list(argv)}, f, indent=1)
    print(" ".join(argv))
    return 0


def _step(result: dict, name: str, fn) -> None:
    began = time.monotonic()
    try:
        result[name] = fn()
    except Exception as err:  # noqa: BLE001 - every step's failure is kept, the others still run
        result[name] = {"error": f"{type(err).__name__}: {err}"[:500]}
    result[name]["seconds"] = round(time.monotonic() - began, 3)


def client(base_url: str, model: str, out: str) -> int:
    import openai
    from openai import OpenAI

    api = OpenAI(base_url=base_url, api_key="unused-by-this-server")
    result: dict = {"openai_version": openai.__version__, "base_url": base_url, "model": model}
    prompt = "The capital of France is"
    messages = [{"role": "user", "content": "Say hello to the fleet"}]

    def models():
        return {"ids": [m.id for m in api.models.list().data]}

    def completion():
        answer = api.completions.create(model=model, prompt=prompt, max_tokens=16, temperature=0)
        return {"text": answer.choices[0].text, "finish_reason": answer.choices[0].finish_reason,
                "usage": answer.usage.model_dump() if answer.usage else None}

    def chat():
        answer = api.chat.completions.create(model=model, messages=messages, max_tokens=16, temperature=0)
        return {"text": answer.choices[0].message.content, "finish_reason": answer.choices[0].finish_reason,
                "usage": answer.usage.model_dump() if answer.usage else None}

    def streamed_chat():
        pieces, usage, chunks = [], None, 0
        for chunk in api.chat.completions.create(model=model, messages=messages, max_tokens=16, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}):
            chunks += 1
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            if chunk.usage is not None:
                usage = chunk.usage.model_dump()
        return {"text": "".join(pieces), "chunks": chunks, "usage": usage}

    def raw_stream():  # the bytes of a streamed chat, as a host program's gate reads them
        body = json.dumps({"model": model, "messages": messages, "max_tokens": 8, "temperature": 0, "stream": True,
                           "stream_options": {"include_usage": True}}).encode()
        request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", body,
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as reply:
            return {"status": reply.status, "body": reply.read().decode()}

    def unknown_model():
        try:
            api.completions.create(model="no-such-model", prompt=prompt, max_tokens=4)
        except openai.APIStatusError as err:
            return {"raised": type(err).__name__, "status": err.status_code, "body": err.body}
        return {"raised": None}

    for name, fn in (("models", models), ("completion", completion), ("chat", chat),
                     ("streamed_chat", streamed_chat), ("raw_stream", raw_stream), ("unknown_model", unknown_model)):
        _step(result, name, fn)
        print(name, json.dumps(result[name])[:300], flush=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    failed = [name for name, value in result.items() if isinstance(value, dict) and "error" in value]
    return 1 if failed else 0


def load_table(openai_doc: dict, triton_doc: dict) -> list[dict]:
    """Per level both paths' figures and Triton's tokens/s over the OpenAI server's. Pure."""
    triton_by_c = {level["concurrency"]: level for level in triton_doc["levels"]}
    rows = []
    for o in openai_doc["levels"]:
        t = triton_by_c.get(o["concurrency"])
        if t is None:
            continue
        ratio = t["output_tok_s"] / o["output_tok_s"] if t["output_tok_s"] and o["output_tok_s"] else None
        rows.append({"concurrency": o["concurrency"], "openai": o, "triton": t,
                     "triton_over_openai": None if ratio is None else round(ratio, 3)})
    return rows


def table_text(rows: list[dict]) -> str:
    lines = ["| streams | tok/s OpenAI server / Triton | Triton / OpenAI | TTFT p50 ms O / T | TTFT p99 ms O / T "
             "| ITL p50 ms O / T | ok / failed O, T |", "|" + "---|" * 7]
    for row in rows:
        o, t = row["openai"], row["triton"]
        lines.append(f"| {row['concurrency']} | {o['output_tok_s']} / {t['output_tok_s']} | "
                     f"{row['triton_over_openai']} | {o['ttft_p50_ms']} / {t['ttft_p50_ms']} | "
                     f"{o['ttft_p99_ms']} / {t['ttft_p99_ms']} | {o['itl_p50_ms']} / {t['itl_p50_ms']} | "
                     f"{o['requests_ok']}/{o['requests_failed']}, {t['requests_ok']}/{t['requests_failed']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("args").add_argument("out")
    sub.add_parser("template").add_argument("tokenizer_dir")
    argv = sub.add_parser("argv")
    for name in ("version_dir", "args_json", "model", "port", "out"):
        argv.add_argument(name)
    cl = sub.add_parser("client")
    for name in ("base_url", "model", "out"):
        cl.add_argument(name)
    tb = sub.add_parser("table")
    tb.add_argument("openai")
    tb.add_argument("triton")
    args = parser.parse_args()
    if args.what == "args":
        return capture_arguments(args.out)
    if args.what == "template":
        return add_template(args.tokenizer_dir)
    if args.what == "argv":
        return render_argv(args.version_dir, args.args_json, args.model, args.port, args.out)
    if args.what == "client":
        return client(args.base_url, args.model, args.out)
    with open(args.openai) as f, open(args.triton) as g:
        print(table_text(load_table(json.load(f), json.load(g))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
