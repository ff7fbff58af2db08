"""The policy of {name}: a linear softmax over the env's observation vector,
kept in a NumPy file (policy.npz). train.py learns it in the training env
(`duel_env`, the referee's own rules engine); bot.py plays it in matches. Both
read the observation through `duel_env`'s one encoder and choose through
`Policy.act`, so the bot plays in a match exactly what it learned.

Reads the header (both fighters' HP, stamina and stagger, round, exchange,
round wins, budget) and the last TAPE_SLOTS_READ exchanges of the tape: the
first FEATURES numbers of the vector, each divided by its largest magnitude
under the rules (the env's observation bounds) so all are within [-1, 1].
"""
import numpy as np

import duel_env

ACTIONS = duel_env.ACTIONS
TAPE_SLOTS_READ = 2
FEATURES = len(duel_env.HEADER_FIELDS) + TAPE_SLOTS_READ * len(duel_env.TAPE_FIELDS)


class Policy:
    def __init__(self, weights, scale):
        self.weights = np.asarray(weights, dtype=np.float64)  # (FEATURES + 1, 6): the last row is the bias
        self.scale = np.asarray(scale, dtype=np.float64)      # (FEATURES,)
        if self.weights.shape != (FEATURES + 1, len(ACTIONS)) or self.scale.shape != (FEATURES,):
            raise ValueError(
                f"a policy of shape {self.weights.shape} over {self.scale.shape} features: "
                f"this bot reads {FEATURES} features and {len(ACTIONS)} actions (train it again)"
            )

    @classmethod
    def new(cls, weight_class="middle"):
        """An untrained policy (uniform over what the fighter can pay for)."""
        space = duel_env.parallel_env(weight_class=weight_class).observation_space("a")["observation"]
        bound = np.maximum(np.abs(space.low), np.abs(space.high))[:FEATURES]
        return cls(np.zeros((FEATURES + 1, len(ACTIONS))), np.maximum(bound, 1.0))

    @classmethod
    def load(cls, path):
        with np.load(path) as saved:
            return cls(saved["weights"], saved["scale"])

    def save(self, path):
        np.savez(path, weights=self.weights, scale=self.scale)

    def features(self, observation):
        """The inputs the policy reads from an observation vector, with a 1 for the bias."""
        x = np.empty(FEATURES + 1)
        x[:FEATURES] = np.asarray(observation[:FEATURES], dtype=np.float64) / self.scale
        x[FEATURES] = 1.0
        return x

    def probabilities(self, x, mask):
        """Softmax of the logits over the actions `mask` marks (the affordable ones)."""
        logits = x @ self.weights
        logits = np.where(np.asarray(mask) > 0, logits, -np.inf)
        logits -= logits.max()
        p = np.exp(logits)
        return p / p.sum()

    def act(self, observation, mask):
        """The action (0..5, duel_env.ACTIONS) the trained policy plays: its most likely."""
        return int(np.argmax(self.probabilities(self.features(observation), mask)))
