"""An example duel bot in Python, built into a WebAssembly component by
componentize-py (see build.sh).

It keeps per-match memory in the WitWorld instance, reads the tape to punish an
opponent that keeps blocking, and asks the model once per round (the referee answers
"unavailable" until a model is configured, and the bot plays on without it).

Everything is imported at top level: a bot has no filesystem at run time.
"""
import random
import sys
import time

from componentize_py_types import Err
from wit_world import WitWorld as _Protocol
from wit_world.imports import log, model
from wit_world.imports.types import Action, Observation

COST = {
    Action.JAB: 4,
    Action.HEAVY: 14,
    Action.BLOCK: 0,
    Action.DODGE: 6,
    Action.FEINT: 2,
    Action.RECOVER: 0,
}


class WitWorld(_Protocol):
    def __init__(self) -> None:
        self.decisions = 0
        self.asked_rounds: set[int] = set()

    def decide(self, observation: Observation) -> Action:
        self.decisions += 1
        mode = observation.match_id
        if mode == "spam":
            line = "spam " * 200
            for _ in range(20_000):
                print(line)
                print(line, file=sys.stderr)
        elif mode == "bigdict":
            table = {i: str(i) for i in range(100_000)}
            log.log(f"built {len(table)} entries")
        elif mode == "raise":
            raise RuntimeError("python bot raises on purpose")

        if observation.round not in self.asked_rounds:
            self.asked_rounds.add(observation.round)
            try:
                model.complete([model.Message("user", "Which action?")], 8)
            except Err as err:
                log.log(f"model refused: {type(err.value).__name__}")

        draw = random.random()
        print(f"decision {self.decisions} draw={draw:.6f} t={time.monotonic():.6f}")

        stamina = observation.you.stamina
        recent = [entry.opponent.action for entry in observation.tape[-4:]]
        if recent and recent.count(Action.BLOCK) >= 2 and stamina >= COST[Action.FEINT]:
            return Action.FEINT
        if stamina < 20:
            return Action.RECOVER
        if observation.opponent.staggered and stamina >= COST[Action.HEAVY]:
            return Action.HEAVY
        return Action.JAB if draw < 0.8 else Action.DODGE
