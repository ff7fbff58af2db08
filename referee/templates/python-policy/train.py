"""Trains {name}'s policy against a built-in fighter in the training env and
saves it to policy.npz: python train.py [--seconds 60] [--opponent builtin:random]

REINFORCE (the policy gradient, with a running-mean baseline) on a linear
softmax policy (policy.py), one match at a time in `duel_env.gym_env`: the
referee's own rules, so what the policy learns holds in `referee local` and on
the ladder. Rewards are the env's: +0.5 a round won, +1 the match won (minus
for a loss). At the end it plays the greedy policy against the opponent in the
env and prints the record.
"""
import argparse
import os
import sys
import time

import numpy as np

import duel_env
from policy import ACTIONS, Policy

HERE = os.path.dirname(os.path.abspath(__file__))


def play(env, policy, rng, greedy):
    """One match. Returns the (features, action, probabilities) of each step and its rewards."""
    observation, _ = env.reset(seed=int(rng.integers(2**31)))
    steps, rewards, over, info = [], [], False, {}
    while not over:
        x = policy.features(observation["observation"])
        p = policy.probabilities(x, observation["action_mask"])
        action = int(np.argmax(p)) if greedy else int(rng.choice(len(ACTIONS), p=p))
        steps.append((x, action, p))
        observation, reward, over, _, info = env.step(action)
        rewards.append(reward)
    return steps, rewards, info.get("match_winner")


def evaluate(env, policy, rng, matches):
    record = {"won": 0, "drawn": 0, "lost": 0}
    for _ in range(matches):
        _, _, winner = play(env, policy, rng, greedy=True)
        record["won" if winner == "a" else "drawn" if winner == "draw" else "lost"] += 1
    return record


def main():
    parser = argparse.ArgumentParser(description="Train {name}'s policy in the training env (duel_env).")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to train (default 60)")
    parser.add_argument("--opponent", default="builtin:random", help="the built-in to train against")
    parser.add_argument("--class", dest="weight_class", default="middle", choices=duel_env.WEIGHT_CLASSES)
    parser.add_argument("--out", default=os.path.join(HERE, "policy.npz"),
                        help="where to save the policy (default: policy.npz beside this file, where bot.py reads it)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the training run")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--evaluate", type=int, default=200, help="matches played greedily at the end")
    args = parser.parse_args()
    if args.seconds <= 0:
        sys.exit("train.py: --seconds must be positive")

    rng = np.random.default_rng(args.seed)
    env = duel_env.gym_env(opponent=args.opponent, weight_class=args.weight_class)
    policy = Policy.new(args.weight_class)
    baseline, matches, wins, started = 0.0, 0, 0, time.monotonic()
    next_report = started + 5
    while time.monotonic() - started < args.seconds:
        steps, rewards, winner = play(env, policy, rng, greedy=False)
        matches += 1
        wins += winner == "a"
        returns = np.cumsum(rewards[::-1])[::-1]  # what each decision led to
        gradient = np.zeros_like(policy.weights)
        for (x, action, p), to_go in zip(steps, returns):
            advantage = to_go - baseline
            one_hot = np.zeros(len(ACTIONS))
            one_hot[action] = 1.0
            gradient += np.outer(x, (one_hot - p) * advantage)
        policy.weights += args.learning_rate * gradient / len(steps)
        baseline += 0.01 * (returns[0] - baseline)
        now = time.monotonic()
        if now >= next_report:
            print(f"{now - started:5.0f} s  {matches:6d} matches  won {wins / matches:5.1%} so far  "
                  f"mean return {baseline:+.2f}", flush=True)
            next_report = now + 5
    policy.save(args.out)
    seconds = time.monotonic() - started
    print(f"trained for {seconds:.0f} s on {matches} matches against {args.opponent}: saved {args.out}")
    record = evaluate(env, policy, rng, args.evaluate)
    print(f"the greedy policy against {args.opponent} in the env, {args.evaluate} matches: "
          f"{record['won']} won, {record['drawn']} drawn, {record['lost']} lost")


if __name__ == "__main__":
    main()
