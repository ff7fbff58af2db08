#!/usr/bin/env python3
"""Time per step of the training env against the environments researchers use
(issue 51's anchors), each in a plain Python loop, alternated round by round:

- duel_env: `parallel_env()`, reset, then random legal actions (sampled
  within the action mask) until the match ends (36 exchanges at most), every
  observation fetched as the API returns it;
- duel_env.Duel: the same matches through the native class under it, both
  observations fetched as bytes every step, no dicts;
- pettingzoo rps_v2: rock-paper-scissors, reset, random actions until it
  truncates (PettingZoo's own simultaneous-move game; 100 steps an episode);
- pyspiel: a 6x6 simultaneous matrix game repeated 36 times
  (`repeated_game(matrix_game, num_repetitions=36)`), random legal actions
  through `apply_actions`, the observation tensor of both players fetched
  every step (OpenSpiel's C++ behind Python), when `open_spiel` is installed.

Usage (the training env's venv, scripts/setup/python-env.sh builds it):
    target/python-env/venv/bin/pip install open_spiel pygame   # pyspiel; rps_v2 imports pygame
    target/python-env/venv/bin/python scripts/bench-training-env.py [--seconds 3] [--rounds 5] [--json]
    target/python-env/venv/bin/python scripts/bench-training-env.py --batch [--n 1024] [--seconds 3] [--rounds 5]

`--batch` times `duel_env.vector_env(n)` instead: n matches stepped per call
(uniform random actions 0..5 from a pre-drawn pool, so the policy costs
nothing), reported as exchanges per second (n per step), for the whole
`BatchEnv.step` (NumPy arrays filled) and for the native `Batch.step` alone
(action bytes in, the same arrays filled, no Python checks), plus the engine's bytes per match.

Prints each environment's microseconds per step (median over rounds, min and
max) and duel_env's ratio to each. Single-threaded; the figures are for this
machine only, ratios are what to compare.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time


def duel_loop(seconds: float) -> tuple[int, float]:
    import duel_env

    env = duel_env.parallel_env()
    rng = random.Random(7)
    steps = 0
    seed = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        observations, _ = env.reset(seed=seed)
        seed += 1
        while env.agents:
            actions = {}
            for agent in env.agents:
                # The mask is a NumPy array: its legal indices in one call
                # (iterating its six items costs more than the step).
                legal = observations[agent]["action_mask"].nonzero()[0].tolist()
                actions[agent] = rng.choice(legal)
            observations, _, _, _, _ = env.step(actions)
            steps += 1
    return steps, time.perf_counter() - began


def duel_native_loop(seconds: float) -> tuple[int, float]:
    """The engine under the PettingZoo class (`duel_env.Duel`): the same
    match, both fighters' observations and masks fetched as bytes each step,
    without the API's dicts."""
    import duel_env

    duel = duel_env.Duel()
    rng = random.Random(7)
    steps = 0
    matches = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        matches += 1
        duel.reset(f"bench-{matches}")
        over = False
        while not over:
            affordable = duel.affordable()
            a = rng.choice([index for index in range(6) if affordable[index]])
            b = rng.choice([index for index in range(6) if affordable[6 + index]])
            over = duel.step(a, b)[1]
            duel.observations()
            steps += 1
    return steps, time.perf_counter() - began


def rps_loop(seconds: float) -> tuple[int, float]:
    from pettingzoo.classic import rps_v2

    env = rps_v2.parallel_env()
    rng = random.Random(7)
    steps = 0
    seed = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        env.reset(seed=seed)
        seed += 1
        while env.agents:
            actions = {agent: rng.randrange(3) for agent in env.agents}
            env.step(actions)
            steps += 1
    return steps, time.perf_counter() - began


def pyspiel_loop(seconds: float) -> tuple[int, float]:
    import pyspiel

    rng = random.Random(7)
    payoff = [[rng.uniform(-1.0, 1.0) for _ in range(6)] for _ in range(6)]
    stage = pyspiel.create_matrix_game(
        "six", "a 6x6 simultaneous game", [str(i) for i in range(6)],
        [str(i) for i in range(6)], payoff, [[-value for value in row] for row in payoff],
    )
    game = pyspiel.create_repeated_game(stage, {"num_repetitions": 36})
    steps = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            actions = [rng.choice(state.legal_actions(player)) for player in range(2)]
            state.apply_actions(actions)
            for player in range(2):
                state.observation_tensor(player)
            steps += 1
    return steps, time.perf_counter() - began


def batch_loop(n: int, seconds: float, native: bool) -> tuple[int, float]:
    import numpy as np

    import duel_env

    batch = duel_env.vector_env(n)
    batch.reset(seed=0)
    pool = np.random.default_rng(7).integers(0, 6, size=(64, n, 2))
    if native:
        raw = [actions.astype(np.uint8).tobytes() for actions in pool]

        def step(actions, native_step=batch._batch.step, outs=batch._outs):
            native_step(actions, *outs)
    else:
        raw = list(pool)
        step = batch.step
    steps = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        for actions in raw:
            step(actions)
        steps += len(raw)
    return steps * n, time.perf_counter() - began


def batch_main(args) -> int:
    import duel_env

    rates: dict[str, list[float]] = {"BatchEnv.step": [], "Batch.step (native)": []}
    for round_number in range(args.rounds):
        for name, native in (("BatchEnv.step", False), ("Batch.step (native)", True)):
            exchanges, elapsed = batch_loop(args.n, args.seconds, native)
            rates[name].append(exchanges / elapsed)
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    figures = {
        name: {
            "exchanges_per_s_median": statistics.median(values),
            "exchanges_per_s_min": min(values),
            "exchanges_per_s_max": max(values),
        }
        for name, values in rates.items()
    }
    bytes_per_match = duel_env.vector_env(args.n).bytes_per_match()
    if args.json:
        print(json.dumps({"n": args.n, "rounds": args.rounds, "seconds": args.seconds,
                          "bytes_per_match": bytes_per_match, "figures": figures}))
    else:
        print(f"n={args.n}, engine bytes per match beyond the observation arrays: {bytes_per_match}")
        print(f"{'call':<24}{'exchanges/s median':>20}{'min':>14}{'max':>14}")
        for name, entry in figures.items():
            print(
                f"{name:<24}{entry['exchanges_per_s_median']:>20,.0f}{entry['exchanges_per_s_min']:>14,.0f}"
                f"{entry['exchanges_per_s_max']:>14,.0f}"
            )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per environment per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--batch", action="store_true", help="time vector_env(n) in exchanges per second")
    parser.add_argument("--n", type=int, default=1024, help="matches per batch (--batch)")
    args = parser.parse_args()
    if args.seconds <= 0 or args.rounds < 1 or args.n < 1:
        parser.error("--seconds must be positive, --rounds and --n at least 1")
    if args.batch:
        return batch_main(args)

    loops = {
        "duel_env": duel_loop,
        "duel_env.Duel (native)": duel_native_loop,
        "pettingzoo rps_v2": rps_loop,
    }
    try:
        import pyspiel  # noqa: F401

        loops["pyspiel repeated 6x6"] = pyspiel_loop
    except ImportError:
        print("pyspiel: not installed (pip install open_spiel), left out", file=sys.stderr)

    per_step: dict[str, list[float]] = {name: [] for name in loops}
    for round_number in range(args.rounds):
        for name, loop in loops.items():
            steps, elapsed = loop(args.seconds)
            per_step[name].append(elapsed / steps * 1e6)
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)

    figures = {
        name: {
            "us_per_step_median": statistics.median(values),
            "us_per_step_min": min(values),
            "us_per_step_max": max(values),
        }
        for name, values in per_step.items()
    }
    duel = figures["duel_env"]["us_per_step_median"]
    for name, entry in figures.items():
        entry["duel_env_faster_by"] = entry["us_per_step_median"] / duel
    if args.json:
        print(json.dumps({"rounds": args.rounds, "seconds": args.seconds, "figures": figures}))
    else:
        print(f"{'environment':<24}{'µs/step median':>16}{'min':>10}{'max':>10}{'duel_env ×':>12}")
        for name, entry in figures.items():
            print(
                f"{name:<24}{entry['us_per_step_median']:>16.2f}{entry['us_per_step_min']:>10.2f}"
                f"{entry['us_per_step_max']:>10.2f}{entry['duel_env_faster_by']:>12.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
