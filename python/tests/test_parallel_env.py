"""The PettingZoo env over the referee's rules: PettingZoo's own API and seed
tests, the documented rewards and masks, exact agreement with the rules crate
played directly, and bad input answered by one-line exceptions."""

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import duel_env

JAB, HEAVY, BLOCK, DODGE, FEINT, RECOVER = range(6)


@pytest.mark.parametrize("mask", duel_env.MASK_MODES)
def test_pettingzoo_parallel_api_test(mask):
    parallel_api_test(duel_env.parallel_env(action_mask=mask), num_cycles=100)


# The AEC test's advice does not fit this env by design: the observation is a
# Dict (PettingZoo's convention for action masks), and the issue names the
# agents "a" and "b", as the referee and replays do.
@pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be")
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
@pytest.mark.filterwarnings("ignore:We recommend agents to be named")
def test_pettingzoo_aec_api_test():
    api_test(duel_env.env(), num_cycles=100)


def test_pettingzoo_seed_tests():
    parallel_seed_test(duel_env.parallel_env)
    seed_test(duel_env.env)


def play(env, rng, seed):
    """Plays one match with uniform random actions (unaffordable ones included);
    returns the actions, the observations and the summed rewards."""
    observations, _ = env.reset(seed=seed)
    seen = [observations]
    actions = []
    totals = {"a": 0.0, "b": 0.0}
    while env.agents:
        chosen = {agent: int(rng.integers(6)) for agent in env.agents}
        actions.append((chosen["a"], chosen["b"]))
        observations, rewards, _, _, _ = env.step(chosen)
        seen.append(observations)
        for agent in totals:
            totals[agent] += rewards[agent]
    return actions, seen, totals


def test_reset_with_a_seed_replays_the_same_match():
    env = duel_env.parallel_env()
    first = play(env, np.random.default_rng(5), seed=9)
    again = play(env, np.random.default_rng(5), seed=9)
    other_env = play(duel_env.parallel_env(), np.random.default_rng(5), seed=9)
    for run in (again, other_env):
        assert run[0] == first[0]
        assert run[2] == first[2]
        for left, right in zip(run[1], first[1]):
            for agent in ("a", "b"):
                np.testing.assert_array_equal(left[agent]["observation"], right[agent]["observation"])
                np.testing.assert_array_equal(left[agent]["action_mask"], right[agent]["action_mask"])


def test_every_exchange_equals_the_rules_played_directly():
    """1,000 seeded random matches through the env, each replayed on the rules
    crate's MatchState with no env in between: every exchange's actions,
    EXHAUSTED and damage are equal, and every observation is in its space."""
    env = duel_env.parallel_env(weight_class="light")
    rng = np.random.default_rng(51)
    space = env.observation_space("a")
    exchanges = 0
    for seed in range(1000):
        actions, seen, totals = play(env, rng, seed)
        assert env.tape() == duel_env.play_rules_directly(actions)
        assert totals["a"] == -totals["b"]
        assert all(space.contains(obs[agent]) for obs in seen for agent in ("a", "b"))
        exchanges += len(actions)
    assert exchanges > 12_000


def test_rewards_per_round_and_per_match():
    # JAB into BLOCK every exchange: b loses each round on HP, a clinches in round 2.
    env = duel_env.parallel_env(round_reward=0.5, match_reward=1.0)
    env.reset(seed=0)
    rewards_seen = []
    for exchange in range(1, 25):
        _, rewards, terminations, truncations, infos = env.step({"a": JAB, "b": BLOCK})
        rewards_seen.append(rewards["a"])
        assert rewards["b"] == -rewards["a"]
        assert truncations == {"a": False, "b": False}
        assert terminations == {"a": exchange == 24, "b": exchange == 24}
        if exchange == 12:
            assert infos["a"]["round_winner"] == "a"
            assert infos["a"]["round_by"] == "hp"
    assert rewards_seen[11] == 0.5
    assert rewards_seen[23] == 1.5
    assert sum(rewards_seen) == 2.0
    assert infos["b"]["match_winner"] == "a"
    assert infos["b"]["decided_by"] == "rounds"
    assert env.agents == []


def test_unaffordable_actions_are_masked_yet_playable_as_exhausted():
    env = duel_env.parallel_env()
    env.reset(seed=1)
    for _ in range(7):
        observations, *_ = env.step({"a": HEAVY, "b": BLOCK})
    # 100 - 7 * 14 = 2 stamina: only BLOCK, FEINT and RECOVER can be paid.
    assert observations["a"]["observation"][1] == 2.0
    assert observations["a"]["action_mask"].tolist() == [0, 0, 1, 0, 1, 1]
    _, _, _, _, infos = env.step({"a": HEAVY, "b": BLOCK})
    assert infos["a"]["exhausted"] is True
    assert infos["b"]["exhausted"] is False
    all_marked = duel_env.parallel_env(action_mask="all")
    all_marked.reset(seed=1)
    for _ in range(7):
        observations, *_ = all_marked.step({"a": HEAVY, "b": BLOCK})
    assert observations["a"]["action_mask"].tolist() == [1] * 6


def test_observation_names_every_number():
    assert len(duel_env.OBSERVATION_FIELDS) == duel_env.OBSERVATION_LEN == 11 + 36 * 11
    assert duel_env.OBSERVATION_FIELDS[11] == "tape0_present"
    env = duel_env.parallel_env(weight_class="heavy")
    observations, _ = env.reset(seed=2)
    observations, *_ = env.step({"a": JAB, "b": HEAVY})
    named = dict(zip(duel_env.OBSERVATION_FIELDS, observations["b"]["observation"].tolist()))
    assert named["you_hp"] == 154.0
    assert named["opponent_hp"] == 142.0
    assert named["budget_left_tokens"] == 512_000.0
    assert named["tape0_you_action"] == HEAVY
    assert named["tape0_opponent_damage_taken"] == 18.0
    assert named["tape1_present"] == 0.0


def one_line_error(error_type, call):
    with pytest.raises(error_type) as caught:
        call()
    message = str(caught.value)
    assert message and "\n" not in message, message
    return message


@pytest.mark.parametrize(
    "actions, error_type, words",
    [
        ({"a": 6, "b": BLOCK}, ValueError, "out of range"),
        ({"a": BLOCK, "b": -1}, ValueError, "out of range"),
        ({"a": 2**70, "b": BLOCK}, OverflowError, ""),
        ({"a": 1.5, "b": BLOCK}, TypeError, ""),
        ({"a": BLOCK}, ValueError, "missing ['b']"),
        ({"a": BLOCK, "b": BLOCK, "c": BLOCK}, ValueError, "unknown ['c']"),
    ],
)
def test_bad_actions_raise_one_line_and_leave_the_env_usable(actions, error_type, words):
    env = duel_env.parallel_env()
    before, _ = env.reset(seed=3)
    env.step({"a": JAB, "b": JAB})
    tape = env.tape()
    message = one_line_error(error_type, lambda: env.step(actions))
    assert words in message
    assert env.tape() == tape, "a refused step plays nothing"
    observations, *_ = env.step({"a": np.int64(BLOCK), "b": BLOCK})
    assert len(env.tape()) == 2
    assert observations["a"]["observation"][7] == 3.0


def test_stepping_after_the_end_or_before_a_reset_raises_until_reset():
    env = duel_env.parallel_env()
    one_line_error(RuntimeError, lambda: env.step({"a": BLOCK, "b": BLOCK}))
    env.reset(seed=4)
    while env.agents:
        env.step({"a": HEAVY, "b": RECOVER})
    message = one_line_error(RuntimeError, lambda: env.step({"a": BLOCK, "b": BLOCK}))
    assert "reset()" in message
    env.reset(seed=4)
    env.step({"a": BLOCK, "b": BLOCK})
    assert len(env.tape()) == 1


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"ruleset": "2.0.0"}, "unknown ruleset version"),
        ({"weight_class": "feather"}, "unknown weight class"),
        ({"action_mask": "legal"}, "unknown action_mask"),
        ({"round_reward": float("nan")}, "finite"),
    ],
)
def test_unknown_settings_raise_one_line(kwargs, words):
    assert words in one_line_error(ValueError, lambda: duel_env.parallel_env(**kwargs))
    duel_env.parallel_env().reset(seed=0)


def test_a_rust_panic_becomes_an_engine_error_and_the_env_recovers_on_reset():
    env = duel_env.parallel_env()
    env.reset(seed=6)
    env.step({"a": JAB, "b": JAB})
    message = one_line_error(
        duel_env.EngineError, lambda: env._duel._panic_for_test("boom\nsecond line")
    )
    assert "boom second line" in message
    assert issubclass(duel_env.EngineError, RuntimeError)
    # The interrupted match refuses to step rather than trust half-updated state.
    assert "reset()" in one_line_error(RuntimeError, lambda: env.step({"a": JAB, "b": JAB}))
    observations, _ = env.reset(seed=6)
    assert observations["a"]["observation"][0] == 160.0
    env.step({"a": JAB, "b": JAB})
    assert len(env.tape()) == 1
