"""The single-agent Gymnasium env against the referee's built-in fighters:
Gymnasium's own check_env, seeded reproducibility, exchanges equal to the rules
played directly, and bad settings answered by one-line exceptions."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import duel_env

OPPONENTS = ["builtin:counter", "builtin:random", "builtin:block", "builtin:script:JAB,HEAVY,FEINT"]


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("opponent", OPPONENTS)
def test_gymnasium_check_env_passes_without_a_warning(opponent):
    # Made through gymnasium.make, so the checker can also try the render mode.
    made = gymnasium.make(duel_env.GYM_ID, opponent=opponent, render_mode="ansi")
    check_env(made.unwrapped, skip_render_check=False)
    check_env(duel_env.gym_env(opponent=opponent), skip_render_check=True)


def play(env, seed, rng):
    observation, info = env.reset(seed=seed)
    seen, actions, total = [observation], [], 0.0
    terminated = False
    while not terminated:
        action = int(rng.integers(6))
        observation, reward, terminated, truncated, info = env.step(action)
        assert truncated is False
        actions.append((action, info["opponent_action"]))
        seen.append(observation)
        total += reward
    return actions, seen, total, info


def test_a_seed_replays_the_same_match_against_builtin_random():
    first = play(duel_env.gym_env(opponent="builtin:random"), 11, np.random.default_rng(1))
    again = play(duel_env.gym_env(opponent="builtin:random"), 11, np.random.default_rng(1))
    assert first[0] == again[0]
    assert first[2] == again[2]
    # Another seed gives builtin:random another stream.
    other = play(duel_env.gym_env(opponent="builtin:random"), 12, np.random.default_rng(1))
    assert [theirs for _, theirs in other[0]] != [theirs for _, theirs in first[0]]


@pytest.mark.parametrize("opponent", OPPONENTS)
def test_every_exchange_equals_the_rules_played_directly(opponent):
    env = duel_env.gym_env(opponent=opponent, weight_class="light")
    rng = np.random.default_rng(7)
    for seed in range(100):
        actions, seen, total, info = play(env, seed, rng)
        assert env.tape() == duel_env.play_rules_directly(actions)
        assert all(env.observation_space.contains(observation) for observation in seen)
        assert "match_winner" in info


def test_the_learner_may_play_b():
    env = duel_env.gym_env(opponent="builtin:script:HEAVY", learner="b")
    env.reset(seed=0)
    _, _, _, _, info = env.step(3)  # DODGE against the script's HEAVY
    assert info["opponent_action"] == 1
    (_, _, a, b), = env.tape()
    assert a[0] == 1 and b[0] == 3


def test_builtin_counter_beats_an_always_block_learner():
    env = duel_env.gym_env(opponent="builtin:counter")
    env.reset(seed=0)
    total, terminated = 0.0, False
    while not terminated:
        _, reward, terminated, _, info = env.step(2)
        total += reward
    assert info["match_winner"] == "b"
    assert total < 0


@pytest.mark.parametrize(
    "opponent, words",
    [
        ("builtin:nope", 'unknown built-in bot "nope"'),
        ("grpc://127.0.0.1:5000", "built-in opponents only"),
        ("bot.wasm\nsecond", "built-in opponents only"),
        ("builtin:script:", "empty script"),
    ],
)
def test_unknown_opponents_raise_one_line(opponent, words):
    with pytest.raises(ValueError) as caught:
        duel_env.gym_env(opponent=opponent)
    message = str(caught.value)
    assert "\n" not in message and words in message, message


def test_bad_steps_raise_one_line_and_leave_the_env_usable():
    env = duel_env.gym_env()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=3)
    for bad, error in ((6, ValueError), (-1, ValueError), (0.5, TypeError)):
        with pytest.raises(error) as caught:
            env.step(bad)
        assert "\n" not in str(caught.value)
    assert env.tape() == []
    terminated = False
    while not terminated:
        _, _, terminated, _, _ = env.step(5)
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.step(0)
    env.reset(seed=3)
    env.step(0)
    assert len(env.tape()) == 1
