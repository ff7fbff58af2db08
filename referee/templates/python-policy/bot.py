"""{name}: a duel bot that plays a policy trained in the training env.

An endpoint bot (a duel.v1.Bot server): the referee asks it once per exchange.
It turns the observation into the env's vector with `duel_env` (the same Rust
encoder the env trains on) and plays what the policy in policy.npz chooses
among the actions its stamina pays for. Train the policy first:

    python train.py                            # about a minute; writes policy.npz
    referee local . builtin:random --logs

`referee local` runs this file itself (in a Python environment made from
requirements.txt, with the duel.v1 stubs on PYTHONPATH). To run it yourself:
`python bot.py --listen 127.0.0.1:50072`, then `referee local
grpc://127.0.0.1:50072 builtin:random`.
"""
import argparse
import os
import sys
from concurrent import futures

import grpc

import duel_env
from duel.v1 import bot_pb2, bot_pb2_grpc
from policy import ACTIONS, Policy

HERE = os.path.dirname(os.path.abspath(__file__))


class Bot(bot_pb2_grpc.BotServicer):
    def __init__(self, policy):
        self.policy = policy

    def Hello(self, request, context):
        return bot_pb2.HelloResponse(name="{name}", version="0.1.0", rulesets=["1.0.0"])

    def Decide(self, request, context):
        observation = request.observation
        vector = duel_env.encode_observation(observation)
        mask = duel_env.affordable(observation.you.stamina, observation.ruleset or "1.0.0")
        index = self.policy.act(vector, mask)
        note = f"stamina {observation.you.stamina}, playing {ACTIONS[index]}"
        # duel.v1.Action counts from 1 (ACTION_JAB); the env's actions from 0.
        return bot_pb2.DecideResponse(action=index + 1, log=[note])


def main():
    parser = argparse.ArgumentParser(description="{name}: a duel.v1.Bot endpoint playing a trained policy")
    parser.add_argument("--listen", default="127.0.0.1:50072", help="address to serve on")
    parser.add_argument("--policy", default=os.path.join(HERE, "policy.npz"), help="the policy to play")
    args = parser.parse_args()
    try:
        policy = Policy.load(args.policy)
    except FileNotFoundError:
        sys.exit(f"bot.py: no policy at {args.policy}: train one first with `python train.py` (about a minute)")
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"bot.py: cannot read the policy {args.policy}: {error}")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    bot_pb2_grpc.add_BotServicer_to_server(Bot(policy), server)
    if server.add_insecure_port(args.listen) == 0:
        sys.exit(f"bot.py: cannot listen on {args.listen}")
    server.start()
    print(f"{name} listening on {args.listen}, playing {args.policy}", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
