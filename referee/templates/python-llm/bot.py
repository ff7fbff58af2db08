"""{name}: a duel bot that thinks with a language model.

An endpoint bot (a duel.v1.Bot server): the referee asks it once per exchange,
and it asks a model through the referee's metered, OpenAI-compatible gateway
with the official `openai` package. Every token it spends counts against its
weight class's budget; when the gateway refuses (the budget is spent, no model
is configured) it plays on without the model.

    referee local . builtin:counter --model-url builtin:house --logs

`referee local` runs this file itself (in a Python environment made from
requirements.txt, with the duel.v1 stubs on PYTHONPATH). To run it yourself:
`python bot.py --listen 127.0.0.1:50071`, then `referee local
grpc://127.0.0.1:50071 builtin:counter`.
"""
import argparse
import os
import sys
from concurrent import futures

import grpc
import openai
from openai import OpenAI

from duel.v1 import bot_pb2, bot_pb2_grpc

ACTIONS = ["JAB", "HEAVY", "BLOCK", "DODGE", "FEINT", "RECOVER"]
# Stamina each action costs (BLOCK and RECOVER give stamina back).
COST = {"JAB": 4, "HEAVY": 14, "BLOCK": 0, "DODGE": 6, "FEINT": 2, "RECOVER": 0}
# The catalogue name of the model to ask; "" asks the referee's default.
MODEL = os.environ.get("DUEL_BOT_MODEL", "")
# Completion tokens per call: one word is enough, and every token counts.
MAX_TOKENS = 12
SYSTEM = (
    "You are a fighter in a duel. Each exchange both fighters pick one action at once. "
    "JAB: -4 stamina, 6 damage (3 into a DODGE). HEAVY: -14 stamina, 18 damage, 4 into a "
    "BLOCK, 0 into a DODGE and you are staggered. BLOCK: +6 stamina, cuts a HEAVY to 4. "
    "DODGE: -6 stamina, negates a HEAVY. FEINT: -2 stamina, 12 damage into a BLOCK and the "
    "blocker loses 15 stamina. RECOVER: +22 stamina, but you take x1.5 damage. "
    "Answer with one word: JAB, HEAVY, BLOCK, DODGE, FEINT or RECOVER."
)


def name_of(action):
    """The action's name from its proto value (ACTION_JAB is 1)."""
    return ACTIONS[action - 1] if 1 <= action <= len(ACTIONS) else "BLOCK"


def describe(observation):
    """The exchange to decide, as the model reads it."""
    you, them = observation.you, observation.opponent
    lines = [
        f"Round {observation.round}, exchange {observation.exchange}; rounds won "
        f"{observation.your_round_wins}-{observation.opponent_round_wins}.",
        f"You: {you.hp} HP, {you.stamina} stamina{' (staggered)' if you.staggered else ''}.",
        f"Opponent: {them.hp} HP, {them.stamina} stamina{' (staggered)' if them.staggered else ''}.",
    ]
    recent = observation.tape[-6:]
    if recent:
        moves = "; ".join(
            f"{name_of(entry.you.action)}/{name_of(entry.opponent.action)}" for entry in recent
        )
        lines.append(f"Last exchanges (you/opponent): {moves}.")
    return "\n".join(lines)


def fallback(observation):
    """What to play without the model: punish a stagger, jab while stamina lasts."""
    stamina = observation.you.stamina
    if observation.opponent.staggered and stamina >= COST["HEAVY"]:
        return "HEAVY"
    return "JAB" if stamina >= 20 else "RECOVER"


def parse(text, stamina):
    """The first action the answer names that stamina pays for, or None."""
    for word in text.upper().replace(".", " ").replace(",", " ").split():
        if word in COST and COST[word] <= stamina:
            return word
    return None


class Bot(bot_pb2_grpc.BotServicer):
    def Hello(self, request, context):
        return bot_pb2.HelloResponse(name="{name}", version="0.1.0", rulesets=["1.0.0"])

    def Decide(self, request, context):
        observation = request.observation
        action = fallback(observation)
        log = []
        if request.openai_base_url and request.inference_token:
            # Stay inside the decision's wall clock, and never retry: a refusal
            # will be refused again, and retries spend the clock.
            remaining = context.time_remaining() or 10.0
            client = OpenAI(
                base_url=request.openai_base_url,
                api_key=request.inference_token,
                max_retries=0,
                timeout=max(0.2, 0.8 * remaining),
            )
            try:
                reply = client.chat.completions.create(
                    model=MODEL,
                    messages=[
                        {"role": "system", "content": SYSTEM},
                        {"role": "user", "content": describe(observation)},
                    ],
                    max_tokens=MAX_TOKENS,
                )
                text = reply.choices[0].message.content or ""
                chosen = parse(text, observation.you.stamina)
                log.append(f"model: {text.strip()[:120]!r} -> {chosen or 'nothing usable'}")
                if chosen:
                    action = chosen
            except openai.RateLimitError:
                log.append("the token budget is spent: playing on without the model")
            except openai.APIStatusError as error:
                log.append(f"model refused ({error.status_code}): {error.message[:120]}")
            except openai.APIError as error:
                log.append(f"model call failed: {error}")
            finally:
                client.close()
        return bot_pb2.DecideResponse(action=ACTIONS.index(action) + 1, log=log)


def main():
    parser = argparse.ArgumentParser(description="{name}: a duel.v1.Bot endpoint that asks a model")
    parser.add_argument("--listen", default="127.0.0.1:50071", help="address to serve on")
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    bot_pb2_grpc.add_BotServicer_to_server(Bot(), server)
    if server.add_insecure_port(args.listen) == 0:
        sys.exit(f"bot.py: cannot listen on {args.listen}")
    server.start()
    print(f"{name} listening on {args.listen}", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
