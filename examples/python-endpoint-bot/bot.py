"""An example duel.v1.Bot endpoint in Python (grpcio).

It counters the opponent's most frequent recent action and, with --think, asks
the referee's metered duel.v1.Inference service for advice using the credential
each DecideRequest carries.

Set up once (installs grpcio/grpcio-tools in a venv and generates the stubs):
    scripts/setup-python-bot.sh
Then:
    examples/python-endpoint-bot/.venv/bin/python examples/python-endpoint-bot/bot.py --listen 127.0.0.1:50062
    referee local grpc://127.0.0.1:50062 builtin:random
"""

import argparse
import collections
import os
import sys
from concurrent import futures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated"))

import grpc  # noqa: E402

from duel.v1 import bot_pb2, bot_pb2_grpc, inference_pb2, inference_pb2_grpc  # noqa: E402

A = bot_pb2
COUNTER = {
    A.ACTION_BLOCK: A.ACTION_FEINT,
    A.ACTION_HEAVY: A.ACTION_DODGE,
    A.ACTION_DODGE: A.ACTION_JAB,
    A.ACTION_RECOVER: A.ACTION_JAB,
    A.ACTION_FEINT: A.ACTION_HEAVY,
    A.ACTION_JAB: A.ACTION_BLOCK,
}
COST = {A.ACTION_JAB: 4, A.ACTION_HEAVY: 14, A.ACTION_DODGE: 6, A.ACTION_FEINT: 2}
NAMES = ["JAB", "HEAVY", "BLOCK", "DODGE", "FEINT", "RECOVER"]
MEMORY_EXCHANGES = 8


def choose(observation):
    recent = [entry.opponent.action for entry in observation.tape[-MEMORY_EXCHANGES:]]
    habit = collections.Counter(recent).most_common(1)
    answer = COUNTER.get(habit[0][0], A.ACTION_BLOCK) if habit else A.ACTION_BLOCK
    if COST.get(answer, 0) > observation.you.stamina:
        return A.ACTION_RECOVER
    return answer


def think(request, timeout_s):
    """One metered model call; the advised action, or None."""
    if not request.inference_url or not request.inference_token:
        return None
    target = request.inference_url.removeprefix("http://")
    o = request.observation
    prompt = (
        f"Round {o.round}, exchange {o.exchange}. My HP {o.you.hp} stamina {o.you.stamina}; "
        f"opponent HP {o.opponent.hp} stamina {o.opponent.stamina}. "
        "Answer with one of JAB HEAVY BLOCK DODGE FEINT RECOVER."
    )
    with grpc.insecure_channel(target) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)
        try:
            reply = stub.Complete(
                inference_pb2.CompleteRequest(
                    messages=[inference_pb2.ChatMessage(role="user", content=prompt)],
                    max_tokens=8,
                ),
                metadata=[("authorization", f"Bearer {request.inference_token}")],
                timeout=timeout_s,
            )
        except grpc.RpcError:
            return None
    text = reply.text.upper()
    for name in NAMES:
        if name in text:
            return A.Action.Value(f"ACTION_{name}")
    return None


class CounterBot(bot_pb2_grpc.BotServicer):
    def __init__(self, name, thinks):
        self.name = name
        self.thinks = thinks

    def Hello(self, request, context):
        return bot_pb2.HelloResponse(name=self.name, version="0.1.0", rulesets=["1.0.0"])

    def Decide(self, request, context):
        action = choose(request.observation)
        if self.thinks:
            remaining = context.time_remaining()
            advice = think(request, 0.8 * remaining if remaining else 2.0)
            if advice is not None:
                action = advice
        return bot_pb2.DecideResponse(action=action)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:50062")
    parser.add_argument("--name", default="python-counter")
    parser.add_argument("--think", action="store_true")
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    bot_pb2_grpc.add_BotServicer_to_server(CounterBot(args.name, args.think), server)
    if server.add_insecure_port(args.listen) == 0:
        sys.exit(f"bot.py: cannot listen on {args.listen}")
    server.start()
    print(f"python bot {args.name} listening on {args.listen}", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
