"""Drives the referee's OpenAI-compatible gateway with the official `openai`
package, as a bot would: reads scenarios as JSON on stdin, prints what the
client saw as JSON on stdout. Run by referee/tests/openai_python.rs."""
import json
import sys

import openai
from openai import OpenAI


def client(base_url, token):
    # The SDK's default retries would hide whether the gateway said not to.
    return OpenAI(base_url=base_url, api_key=token, max_retries=2, timeout=20.0)


def plain(base_url, scenario):
    reply = client(base_url, scenario["token"]).chat.completions.create(
        model=scenario.get("model", ""),
        messages=scenario["messages"],
        max_tokens=scenario.get("max_tokens", 32),
    )
    return {
        "content": reply.choices[0].message.content,
        "finish_reason": reply.choices[0].finish_reason,
        "model": reply.model,
        "usage": reply.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}),
    }


def streamed(base_url, scenario):
    stream = client(base_url, scenario["token"]).chat.completions.create(
        model=scenario.get("model", ""),
        messages=scenario["messages"],
        max_completion_tokens=scenario.get("max_tokens", 32),
        stream=True,
        stream_options={"include_usage": True},
    )
    content, usage, chunks, finish = "", None, 0, None
    for chunk in stream:
        chunks += 1
        if chunk.choices:
            content += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage is not None:
            usage = chunk.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"})
    return {"content": content, "usage": usage, "chunks": chunks, "finish_reason": finish}


def models(base_url, scenario):
    return {"ids": [model.id for model in client(base_url, scenario["token"]).models.list()]}


def failing(base_url, scenario):
    try:
        plain(base_url, scenario)
    except openai.APIStatusError as error:
        return {
            "exception": type(error).__name__,
            "status": error.status_code,
            "code": error.code,
            "retry_header": error.response.headers.get("x-should-retry"),
        }
    return {"exception": None}


KINDS = {"plain": plain, "streamed": streamed, "models": models, "failing": failing}


def main():
    request = json.load(sys.stdin)
    results = {}
    for name, scenario in request["scenarios"].items():
        results[name] = KINDS[scenario["kind"]](request["base_url"], scenario)
    results["openai_version"] = openai.__version__
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
