#!/usr/bin/env python3
"""What the season fit's standings converge to, and how they spread, without playing a season.

Reads a `referee tournament --json` round robin (its pair results), plays the
ladder's view of it on paper, and compares the standings (rating - 2*RD) with
the round robin's scores by Kendall's tau-b, as scripts/ladder-vs-round-robin.py
does with a real season:

- the bots' owners as the ladder script gives them (the bots in name order,
  dealt to three owners in turn); pairs of one owner never meet;
- a pair whose round-robin games all ended alike (a deterministic pair) is one
  game; any other pair is N games drawn from its round-robin wins, draws and
  losses (--games N), or exactly its mean score (noise-free);
- the fit mirrors ladder/core/src/rating.rs `season_fit` (Bradley-Terry MAP,
  priors 1500 +- 350, deviation 1/sqrt(curvature)), with each pair's games
  weighted by one of the rules below.

Rules: `one-game` (each pair weighs one game: the rule before 2026-12-06),
`share` (the class's rated games shared evenly between its pairs: the rule
since), or a number W (each pair weighs W games).

    python3 scripts/season-fit-sim.py ROUND_ROBIN.json [--games 7 15 30] [--seasons 300]
"""
import argparse
import importlib.util
import itertools
import json
import math
import os
import random

SCALE = 173.7178  # rating points per unit of Glicko-2's scale


def _season_script():
    """scripts/ladder-vs-round-robin.py, for its tau-b and its owners (one definition of each)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ladder-vs-round-robin.py")
    spec = importlib.util.spec_from_file_location("ladder_vs_round_robin", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_LADDER = _season_script()
tau_b = _LADDER.kendall_tau_b
OWNERS = len(_LADDER.OWNERS)


def solve(matrix, vector):
    """Gauss-Jordan with partial pivoting: small dense systems only."""
    n = len(vector)
    rows = [row[:] + [vector[i]] for i, row in enumerate(matrix)]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(rows[r][i]))
        rows[i], rows[pivot] = rows[pivot], rows[i]
        for r in range(n):
            if r != i:
                factor = rows[r][i] / rows[i][i]
                for k in range(i, n + 1):
                    rows[r][k] -= factor * rows[i][k]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def fit(bots, games, prior_deviation=350.0):
    """games: (a, b, a's points, weight). Ratings and deviations, as season_fit."""
    precision = 1 / (prior_deviation / SCALE) ** 2
    mu = [0.0] * bots
    for _ in range(100):
        gradient = [-precision * m for m in mu]
        curvature = [[precision if i == j else 0.0 for j in range(bots)] for i in range(bots)]
        for a, b, points, weight in games:
            expected = 1 / (1 + math.exp(mu[b] - mu[a]))
            gradient[a] += weight * (points - expected)
            gradient[b] -= weight * (points - expected)
            k = weight * expected * (1 - expected)
            curvature[a][a] += k
            curvature[b][b] += k
            curvature[a][b] -= k
            curvature[b][a] -= k
        step = solve(curvature, gradient)
        mu = [m + s for m, s in zip(mu, step)]
        if max(abs(s) for s in step) < 1e-12:
            break
    return ([1500 + SCALE * m for m in mu],
            [SCALE / math.sqrt(curvature[i][i]) for i in range(bots)])


def season(bots, results, owner, rule, rng, games_per_random_pair):
    """One season's standings (rating - 2*RD) and ratings; rng None: noise-free."""
    index = {bot: at for at, bot in enumerate(bots)}
    pairs = []
    for a, b in itertools.combinations(bots, 2):
        if owner[a] == owner[b]:
            continue
        wins, draws, losses = results[(a, b)]
        total = wins + draws + losses
        mean = (wins + draws / 2) / total
        deterministic = sum(count > 0 for count in (wins, draws, losses)) == 1
        if rng is None or deterministic:
            points = [mean]
        else:
            points = []
            for _ in range(games_per_random_pair):
                draw = rng.random() * total
                points.append(1.0 if draw < wins else 0.5 if draw < wins + draws else 0.0)
        pairs.append((index[a], index[b], points))
    rated = sum(len(points) for _, _, points in pairs)
    weight = {"one-game": 1.0, "share": rated / len(pairs)}.get(rule)
    weight = float(rule) if weight is None else weight
    games = [(a, b, p, weight / len(points)) for a, b, points in pairs for p in points]
    ratings, deviations = fit(len(bots), games)
    return [r - 2 * d for r, d in zip(ratings, deviations)], ratings, deviations


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("round_robin", help="`referee tournament --json` output")
    parser.add_argument("--rules", nargs="+", default=["one-game", "share", "2", "4"])
    parser.add_argument("--games", nargs="+", type=int, default=[7, 15, 30],
                        help="rated games per random pair in a season (default 7 15 30)")
    parser.add_argument("--seasons", type=int, default=300, help="seasons drawn per case")
    parser.add_argument("--tie", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with open(args.round_robin) as saved:
        standings = json.load(saved)["standings"]
    bots = sorted(row["bot"] for row in standings["bots"])
    scores = [next(row["score"] for row in standings["bots"] if row["bot"] == bot) for bot in bots]
    results = {}
    for row in standings["pairs"]:
        results[(row["a"], row["b"])] = (row["wins"], row["draws"], row["losses"])
        results[(row["b"], row["a"])] = (row["losses"], row["draws"], row["wins"])
    owner = {bot: at % OWNERS for at, bot in enumerate(bots)}
    print(f"{'rule':>8} {'games':>5}  tau-b by rating-2RD (mean, min, share >= 0.8)   by rating alone   deviations")
    for rule in args.rules:
        standing, ratings, deviations = season(bots, results, owner, rule, None, 1)
        print(f"{rule:>8} {'exact':>5}  {tau_b(standing, scores, args.tie):.3f}"
              f"{'':>36} {tau_b(ratings, scores, args.tie):.3f}"
              f"             {min(deviations):.0f}-{max(deviations):.0f}")
        for games in args.games:
            rng = random.Random(args.seed)
            by_standing, by_rating, widest = [], [], []
            for _ in range(args.seasons):
                standing, ratings, deviations = season(bots, results, owner, rule, rng, games)
                by_standing.append(tau_b(standing, scores, args.tie))
                by_rating.append(tau_b(ratings, scores, args.tie))
                widest.append(max(deviations))
            met = sum(t >= 0.8 for t in by_standing) / len(by_standing)
            print(f"{rule:>8} {games:>5}  {sum(by_standing) / len(by_standing):.3f}, "
                  f"{min(by_standing):.3f}, {met:.0%}{'':>21} "
                  f"{sum(by_rating) / len(by_rating):.3f}"
                  f"             widest {sum(widest) / len(widest):.0f}")


if __name__ == "__main__":
    main()
