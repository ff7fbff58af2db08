"""The duel's training environment: the referee's own rules engine (the Rust
crate duel-rules, through duel-env) behind PettingZoo's Parallel API.

    import duel_env
    env = duel_env.parallel_env(weight_class="middle")
    observations, infos = env.reset(seed=1)
    while env.agents:
        actions = {agent: policy(observations[agent]) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)

docs/areas/training.md describes the observation, the action mask and the
rewards; `OBSERVATION_FIELDS` names every number of the observation vector.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from ._native import (
    ACTIONS,
    Batch,
    HEADER_FIELDS,
    OBSERVATION_LEN,
    RULESETS,
    TAPE_FIELDS,
    TAPE_SLOTS,
    WEIGHT_CLASSES,
    Duel,
    EngineError,
    Solo,
    play_rules_directly,
)
from ._native import affordable as _affordable
from ._native import bounds as _bounds
from ._native import encode_observation as _encode_observation

__all__ = [
    "ACTIONS",
    "AGENTS",
    "AUTORESET_MODE",
    "Batch",
    "BatchEnv",
    "HEADER_FIELDS",
    "MASK_MODES",
    "OBSERVATION_FIELDS",
    "OBSERVATION_LEN",
    "RULESETS",
    "TAPE_FIELDS",
    "TAPE_SLOTS",
    "WEIGHT_CLASSES",
    "Duel",
    "DuelGymEnv",
    "DuelParallelEnv",
    "GYM_ID",
    "EngineError",
    "affordable",
    "encode_observation",
    "env",
    "gym_env",
    "parallel_env",
    "vector_env",
    "play_rules_directly",
    "Solo",
]

AGENTS = ("a", "b")

#: "affordable": the mask marks what the fighter can pay for now (a policy that
#: samples within it never performs EXHAUSTED); "all": every action is marked,
#: so a masked learner meets EXHAUSTED and learns its cost. In both modes an
#: unaffordable action is accepted and played as the rules play it: EXHAUSTED.
MASK_MODES = ("affordable", "all")

#: The name of every number of the observation vector, in order: the header,
#: then the tape's slots, newest first ("tape0_you_action" is the last exchange's).
OBSERVATION_FIELDS = tuple(HEADER_FIELDS) + tuple(
    f"tape{slot}_{field}" for slot in range(TAPE_SLOTS) for field in TAPE_FIELDS
)


def _observation_space(ruleset: str, weight_class: str) -> spaces.Dict:
    low, high = (np.frombuffer(raw, dtype="<f4") for raw in _bounds(ruleset, weight_class))
    return spaces.Dict(
        {
            "observation": spaces.Box(low, high, dtype=np.float32),
            "action_mask": spaces.Box(0, 1, shape=(len(ACTIONS),), dtype=np.int8),
        }
    )


class DuelParallelEnv(ParallelEnv):
    """One Ruleset 1.0.0 match at a time between agents "a" and "b", both acting
    every exchange. Rewards are zero-sum: `round_reward` to the winner of a
    round (minus it to the loser) on the exchange that ends the round, and
    `match_reward` on top on the exchange that ends the match. A match always
    ends within 36 exchanges, so episodes terminate and are never truncated."""

    metadata = {"name": "duel_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        ruleset: str = "1.0.0",
        weight_class: str = "middle",
        round_reward: float = 0.5,
        match_reward: float = 1.0,
        action_mask: str = "affordable",
        render_mode: str | None = None,
    ):
        if action_mask not in MASK_MODES:
            raise ValueError(f"unknown action_mask {action_mask!r} (expected 'affordable' or 'all')")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"unknown render_mode {render_mode!r} (expected None or 'ansi')")
        # The engine checks the ruleset and the class (ValueError, one line).
        self._duel = Duel(ruleset, weight_class, round_reward, match_reward)
        self._mask_all = action_mask == "all"
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        # One space object per agent, so seeding one agent's does not move the other's.
        self._observation_spaces = {agent: _observation_space(ruleset, weight_class) for agent in AGENTS}
        self._action_spaces = {agent: spaces.Discrete(len(ACTIONS)) for agent in AGENTS}
        self._seed: int | None = None
        self._matches = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        # The rules draw no random numbers: a match depends only on the actions.
        # The seed names the match (in gym_env it also seeds the built-in opponent).
        if seed is not None:
            self._seed = int(seed)
            self._matches = 0
        self._matches += 1
        self._duel.reset(f"duel-env-{self._seed}-{self._matches}")
        self.agents = list(self.possible_agents)
        return self._observe(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            raise RuntimeError("the match is over (or not started): call reset() before step()")
        # The usual call names both agents and nothing else: checked without
        # building sets (this loop is the env's per-step overhead).
        if len(actions) != 2 or "a" not in actions or "b" not in actions:
            unknown = sorted(set(actions) - set(self.agents), key=str)
            missing = [agent for agent in self.agents if agent not in actions]
            raise ValueError(
                f"step needs one action for each of {self.agents}: missing {missing}, unknown {unknown}"
            )
        rewards, over, exhausted, round_verdict, match_verdict = self._duel.step(
            actions["a"], actions["b"]
        )
        observations = self._observe()
        infos: dict[str, dict[str, Any]] = {}
        for index, agent in enumerate(AGENTS):
            info: dict[str, Any] = {"exhausted": exhausted[index]}
            if round_verdict is not None:
                info["round_winner"], info["round_by"] = round_verdict
            if match_verdict is not None:
                info["match_winner"], info["decided_by"] = match_verdict
            infos[agent] = info
        rewards_by_agent = {agent: float(rewards[index]) for index, agent in enumerate(AGENTS)}
        terminations = {agent: over for agent in AGENTS}
        truncations = {agent: False for agent in AGENTS}
        if over:
            self.agents = []
        return observations, rewards_by_agent, terminations, truncations, infos

    def _observe(self) -> dict[str, dict[str, np.ndarray]]:
        # One writable copy each of both fighters' rows; each agent gets a view
        # of its own row (a caller may change its arrays without touching the
        # other's).
        vectors = np.frombuffer(self._duel.observations(), dtype="<f4").reshape(2, OBSERVATION_LEN)
        vectors = vectors.astype(np.float32)
        if self._mask_all:
            masks = np.ones((2, len(ACTIONS)), dtype=np.int8)
        else:
            masks = np.frombuffer(self._duel.affordable(), dtype=np.int8).reshape(2, len(ACTIONS)).copy()
        return {
            "a": {"observation": vectors[0], "action_mask": masks[0]},
            "b": {"observation": vectors[1], "action_mask": masks[1]},
        }

    def tape(self):
        """The match so far: (round, exchange, (action, exhausted, damage taken)
        of "a", the same of "b") per exchange."""
        return self._duel.tape()

    def replay(self, accepted_at: str | None = None, signing_key: str | os.PathLike | None = None) -> str:
        """The finished match as a replay (a `duel-replay/1` JSON document, the
        text `referee local --replay` writes): `referee replay verify`, `referee
        replay show` and the viewer take it. Each agent is recorded as the
        built-in script of what it played (`builtin:script:JAB,HEAVY,…`), so
        `referee local` with the two specs plays the same match again. The
        header carries the reset's seed (0 when none was given) and
        `accepted_at` (RFC 3339, now by default). Unsigned unless
        `signing_key` names a key file (made there if missing, as the
        referee's own); `referee replay sign` signs one later.

        Raises RuntimeError before the match is over, ValueError for a seed
        past 2^53 - 1 (the largest a replay carries)."""
        seed = 0 if self._seed is None else self._seed
        if seed < 0:
            raise ValueError(f"seed {seed} cannot be written into a replay: replays carry seeds 0 to 2^53 - 1")
        return self._duel.replay(_accepted_at(accepted_at), seed, _key_path(signing_key))

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return _render_tape(self._duel.tape())

    def close(self) -> None:
        pass


class DuelGymEnv(gymnasium.Env):
    """A single-agent Gymnasium env: the learner plays one side ("a" unless
    `learner="b"`) against a built-in fighter of the referee (`opponent`,
    "builtin:counter", "builtin:random", "builtin:block" or
    "builtin:script:JAB,HEAVY,…"), the same code `referee local` plays. The
    observation, action mask and rewards are the Parallel env's, from the
    learner's side. Each match is played with a seed drawn from the env's
    `np_random`; it seeds the built-in as the referee's match seed does
    (`info["match_seed"]` names it)."""

    # render_fps: Gymnasium asks every env for one; "ansi" renders the tape as
    # text, so the figure only paces a viewer that replays it.
    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        opponent: str = "builtin:counter",
        ruleset: str = "1.0.0",
        weight_class: str = "middle",
        round_reward: float = 0.5,
        match_reward: float = 1.0,
        action_mask: str = "affordable",
        learner: str = "a",
        render_mode: str | None = None,
    ):
        if action_mask not in MASK_MODES:
            raise ValueError(f"unknown action_mask {action_mask!r} (expected 'affordable' or 'all')")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"unknown render_mode {render_mode!r} (expected None or 'ansi')")
        self._solo = Solo(opponent, ruleset, weight_class, round_reward, match_reward, learner)
        self._mask_all = action_mask == "all"
        self.render_mode = render_mode
        self.observation_space = _observation_space(ruleset, weight_class)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self._started = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        # Below 2^53, the largest seed a replay's signature binds (SEED_MAX), so
        # every match here is one `referee local --seed` can play too.
        match_seed = int(self.np_random.integers(0, 2**53))
        self._solo.reset(f"duel-env-{match_seed}", match_seed)
        self._started = True
        return self._observe(), {"match_seed": match_seed}

    def step(self, action):
        if not self._started:
            raise RuntimeError("the match is not started: call reset() before step()")
        reward, over, exhausted, theirs, round_verdict, match_verdict = self._solo.step(action)
        info: dict[str, Any] = {"exhausted": exhausted, "opponent_action": theirs}
        if round_verdict is not None:
            info["round_winner"], info["round_by"] = round_verdict
        if match_verdict is not None:
            info["match_winner"], info["decided_by"] = match_verdict
        return self._observe(), float(reward), over, False, info

    def _observe(self) -> dict[str, np.ndarray]:
        vector = np.frombuffer(self._solo.observation(), dtype="<f4").astype(np.float32)
        if self._mask_all:
            mask = np.ones(len(ACTIONS), dtype=np.int8)
        else:
            mask = np.frombuffer(self._solo.affordable(), dtype=np.int8).copy()
        return {"observation": vector, "action_mask": mask}

    def tape(self):
        """The match so far, fighter "a" first, as DuelParallelEnv.tape()."""
        return self._solo.tape()

    def replay(self, accepted_at: str | None = None, signing_key: str | os.PathLike | None = None) -> str:
        """The finished match as a replay, as DuelParallelEnv.replay(): the
        learner recorded as the script of what it played, the built-in by its
        spec, and the match seed (`info["match_seed"]`), so `referee local`
        with both specs and `--seed` plays it again exchange for exchange."""
        if not self._started:
            raise RuntimeError("the match is not started: call reset() and play it to the end first")
        return self._solo.replay(_accepted_at(accepted_at), _key_path(signing_key))

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return _render_tape(self._solo.tape())


def _accepted_at(accepted_at: str | None) -> str:
    if accepted_at is None:
        return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not isinstance(accepted_at, str):
        raise TypeError(f"accepted_at must be an RFC 3339 string, got {type(accepted_at).__name__}")
    try:
        parsed = datetime.datetime.fromisoformat(accepted_at.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None or "T" not in accepted_at:
        raise ValueError(f"accepted_at {accepted_at[:40]!r} is not an RFC 3339 time such as '2026-12-07T12:00:00Z'")
    return accepted_at


def _key_path(signing_key) -> str | None:
    return None if signing_key is None else os.fspath(signing_key)


def _render_tape(tape) -> str:
    lines = []
    for round_number, exchange, a, b in tape:
        sides = [
            f"{ACTIONS[action]}{' (exhausted)' if exhausted else ''} took {damage}"
            for action, exhausted, damage in (a, b)
        ]
        lines.append(f"round {round_number} exchange {exchange}: a {sides[0]}; b {sides[1]}")
    return "\n".join(lines)


def _tape_side(side, at: int):
    # Proto enums count from 1 (0 is UNSPECIFIED, never sent); the vector from 0.
    action, source = int(side.action) - 1, int(side.source) - 1
    if not 0 <= action < len(ACTIONS):
        raise ValueError(f"tape entry {at}: action {int(side.action)} is not one of duel.v1's six (1..6)")
    if not 0 <= source < 4:
        raise ValueError(f"tape entry {at}: source {int(side.source)} is not one of duel.v1's four (1..4)")
    return (action, bool(side.exhausted), source, int(side.damage_taken))


def encode_observation(observation, weight_class: str | None = None) -> np.ndarray:
    """A bot's observation as the env's vector: `observation` is the
    `duel.v1.Observation` an endpoint bot's `Decide` receives (or any object
    with its fields: `you`, `opponent`, `round`, `exchange`, round wins,
    `budget_left_tokens`, `tape` of entries with `you`/`opponent` halves, proto
    enums counting from 1). The numbers are written by the same Rust code the
    env uses (`duel_env::encode`), so a policy trained in the env reads in a
    match exactly what it read in training. Returns float32 (OBSERVATION_LEN,)."""
    tape = [
        (int(entry.round), int(entry.exchange), _tape_side(entry.you, at), _tape_side(entry.opponent, at))
        for at, entry in enumerate(observation.tape)
    ]
    ruleset = getattr(observation, "ruleset", "") or "1.0.0"
    if weight_class is None:
        # duel.v1.WeightClass: 1 light, 2 middle, 3 heavy; the class only
        # bounds the budget figure, which the observation carries itself.
        weight_class = {1: "light", 3: "heavy"}.get(int(getattr(observation, "class", 2) or 2), "middle")
    you, them = observation.you, observation.opponent
    raw = _encode_observation(
        (int(you.hp), int(you.stamina), bool(you.staggered)),
        (int(them.hp), int(them.stamina), bool(them.staggered)),
        int(observation.round),
        int(observation.exchange),
        int(observation.your_round_wins),
        int(observation.opponent_round_wins),
        int(observation.budget_left_tokens),
        tape,
        ruleset,
        weight_class,
    )
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def affordable(stamina: int, ruleset: str = "1.0.0") -> np.ndarray:
    """The env's "affordable" mask for a fighter with `stamina`: int8 (6,),
    1 where the rules let it pay for the action."""
    return np.frombuffer(_affordable(int(stamina), ruleset), dtype=np.int8).copy()


def gym_env(**kwargs) -> DuelGymEnv:
    """The single-agent env against a built-in; keyword arguments as DuelGymEnv's."""
    return DuelGymEnv(**kwargs)


#: `gymnasium.make(GYM_ID, opponent="builtin:counter")` makes a DuelGymEnv.
GYM_ID = "duel_env/Duel-v0"
gymnasium.register(id=GYM_ID, entry_point="duel_env:DuelGymEnv")


def parallel_env(**kwargs) -> DuelParallelEnv:
    """The Parallel API env; keyword arguments as DuelParallelEnv's."""
    return DuelParallelEnv(**kwargs)


def env(**kwargs):
    """The same env behind PettingZoo's AEC API (one agent at a time)."""
    return parallel_to_aec(parallel_env(**kwargs))


#: How BatchEnv resets a finished match: "same-step" (Gymnasium's
#: AutoresetMode.SAME_STEP). The step that ends a match returns its rewards and
#: `terminations[i] = True`, and already the new match's first observation and
#: mask; the ended match's last observation is in `final_observations[i]`.
AUTORESET_MODE = "same-step"


class BatchEnv:
    """`n` matches between two learners stepped together: one call plays an
    exchange in every match, the engine working with the GIL released.

    The env owns preallocated NumPy arrays that every `reset()` and `step()`
    overwrites in place (copy what you keep):

    - `observations` (n, 2, OBSERVATION_LEN) float32, fighter "a" then "b";
    - `action_masks` (n, 2, 6) int8, the affordable actions (as the Parallel
      env's default "affordable" mask);
    - `rewards` (n, 2) float32, zero-sum as the Parallel env's;
    - `terminations` (n,) bool, True on the step that ended match i;
    - `final_observations` (n, 2, OBSERVATION_LEN) float32: row i is the last
      observation of the match that ended in the last step where
      `terminations[i]` is True (other rows keep older contents).

    Auto-reset is same-step (`AUTORESET_MODE`): a match that ends is reset in
    the same step, so `observations[i]` is always a live match's and every
    step needs an action for every match. Matches always end within 36
    exchanges: nothing is ever truncated. The rules draw no random numbers:
    `reset(seed)` is accepted for the usual API and changes nothing (results
    depend only on the actions)."""

    metadata = {"name": "duel_batch_v0", "autoreset_mode": AUTORESET_MODE}

    def __init__(
        self,
        n: int,
        ruleset: str = "1.0.0",
        weight_class: str = "middle",
        round_reward: float = 0.5,
        match_reward: float = 1.0,
    ):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise ValueError(f"n must be an int, got {type(n).__name__}")
        # The engine checks n's range, the ruleset, the class and the rewards.
        self._batch = Batch(int(n), ruleset, weight_class, round_reward, match_reward)
        self.num_envs = n = int(n)
        self.observations = np.zeros((n, 2, OBSERVATION_LEN), dtype=np.float32)
        self.action_masks = np.zeros((n, 2, len(ACTIONS)), dtype=np.int8)
        self.rewards = np.zeros((n, 2), dtype=np.float32)
        self.terminations = np.zeros(n, dtype=np.bool_)
        self.final_observations = np.zeros((n, 2, OBSERVATION_LEN), dtype=np.float32)
        # The engine writes into these through the buffer protocol (the
        # terminations as their uint8 view).
        self._outs = (self.observations, self.action_masks, self.rewards, self.terminations.view(np.uint8))
        self.single_observation_space = _observation_space(ruleset, weight_class)
        self.single_action_space = spaces.Discrete(len(ACTIONS))
        self._started = False

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Starts a new match in every slot. Returns (observations, action_masks)."""
        self._finals(self._batch.reset(*self._outs))
        self._started = True
        return self.observations, self.action_masks

    def step(self, actions):
        """Plays one exchange in every match. `actions`: an (n, 2) array of
        integers 0..5, fighter "a" first. Returns (observations, action_masks,
        rewards, terminations), the env's own arrays. A bad `actions` raises
        ValueError and changes nothing."""
        if not self._started:
            raise RuntimeError("the batch is not started: call reset() before step()")
        if not isinstance(actions, np.ndarray):
            actions = np.asarray(actions)
        expected = (self.num_envs, 2)
        if actions.shape != expected:
            raise ValueError(f"actions must have shape {expected}, got {actions.shape}")
        if actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be an integer array, got dtype {actions.dtype}")
        low, high = int(actions.min()), int(actions.max())
        if low < 0 or high >= len(ACTIONS):
            bad = np.argwhere((actions < 0) | (actions >= len(ACTIONS)))[0]
            raise ValueError(
                f"action {int(actions[bad[0], bad[1]])} for match {int(bad[0])} agent "
                f"{AGENTS[bad[1]]!r} is out of range (expected 0..=5: {', '.join(ACTIONS)})"
            )
        self._finals(self._batch.step(actions.astype(np.uint8).tobytes(), *self._outs))
        return self.observations, self.action_masks, self.rewards, self.terminations

    def _finals(self, finals: bytes) -> None:
        if finals:
            self.final_observations[self.terminations] = np.frombuffer(finals, dtype="<f4").reshape(
                -1, 2, OBSERVATION_LEN
            )

    def bytes_per_match(self) -> int:
        """What the engine holds per match beyond the observation arrays."""
        return self._batch.bytes_per_match()

    def close(self) -> None:
        pass


def vector_env(n: int, **kwargs) -> BatchEnv:
    """`n` matches stepped together; keyword arguments as BatchEnv's."""
    return BatchEnv(n, **kwargs)
