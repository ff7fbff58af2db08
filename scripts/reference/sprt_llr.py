#!/usr/bin/env python3
"""Independent reference for the pentanomial SPRT log-likelihood ratio.

Logistic Elo model, as fastchess computes it: the maximum-likelihood distribution
with a given mean (M. Van den Bergh, "Comments on Normalized Elo", proposition
1.1), empty cells counted as 1e-3. Used to pin the Rust implementation's values
in referee/src/arena/stats.rs. Usage: sprt_llr.py ELO0 ELO1 LL LD DD WD WW
"""
import math
import sys

SCORES = [0.0, 0.25, 0.5, 0.75, 1.0]


def expected_score(elo):
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def mle(p_hat, s):
    def f(theta):
        return sum(p * (a - s) / (1.0 + theta * (a - s)) for a, p in zip(SCORES, p_hat))

    lo, hi = -1.0 / (SCORES[-1] - s), -1.0 / (SCORES[0] - s)
    for _ in range(400):
        mid = (lo + hi) / 2.0
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    theta = (lo + hi) / 2.0
    return [p / (1.0 + theta * (a - s)) for a, p in zip(SCORES, p_hat)]


def llr(counts, elo0, elo1):
    weights = [c if c > 0 else 1e-3 for c in counts]
    total = sum(weights)
    p_hat = [w / total for w in weights]
    p0 = mle(p_hat, expected_score(elo0))
    p1 = mle(p_hat, expected_score(elo1))
    return total * sum(p * (math.log(b) - math.log(a)) for p, a, b in zip(p_hat, p0, p1))


if __name__ == "__main__":
    elo0, elo1 = float(sys.argv[1]), float(sys.argv[2])
    counts = [int(x) for x in sys.argv[3:8]]
    print(repr(llr(counts, elo0, elo1)))
