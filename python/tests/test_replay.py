"""Same engine, same verdicts (issue 51, item 4): the env's matches as the
referee's replays. 10,000 seeded random matches are played in Python and each
one's replay agrees with the rules crate exchange by exchange; a sample is
played again by the `referee` binary from the specs the replay names, and
every exchange is equal, and `referee replay verify` accepts the env's replays
(unsigned and signed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import duel_env

ACCEPTED_AT = "2026-12-07T12:00:00Z"
# The fields of a side the rules decide (the rest are timing and notes).
SIDE_FIELDS = ("action", "source", "exhausted", "damage_taken", "hp", "stamina", "staggered", "tokens")


def play_random(env, rng) -> None:
    """Uniform over all six actions, unaffordable ones included (EXHAUSTED)."""
    while env.agents:
        env.step({"a": int(rng.integers(6)), "b": int(rng.integers(6))})


def exchanges(replay: dict):
    for round_record in replay["rounds"]:
        for exchange in round_record["exchanges"]:
            yield round_record["number"], exchange


def rules_view(replay: dict):
    """What the rules decided in a replay: every exchange's sides, every
    round's verdict, the match's."""
    sides = [
        (number, exchange["number"], *[tuple(exchange[side][field] for field in SIDE_FIELDS) for side in "ab"])
        for number, exchange in exchanges(replay)
    ]
    rounds = [(r["number"], r["result"]["winner"], r["result"]["by"]) for r in replay["rounds"]]
    return sides, rounds, replay["result"]


def test_ten_thousand_matches_replay_as_the_rules_play_them():
    env = duel_env.parallel_env(weight_class="middle")
    rng = np.random.default_rng(51)
    total_exchanges = 0
    for seed in range(10_000):
        env.reset(seed=seed)
        play_random(env, rng)
        replay = json.loads(env.replay(accepted_at=ACCEPTED_AT))
        assert replay["format"] == "duel-replay/1"
        assert replay["seed"] == seed
        assert replay["match_id"] == f"duel-env-{seed}-1"
        tape = env.tape()
        recorded = list(exchanges(replay))
        assert len(recorded) == len(tape)
        actions = [(duel_env.ACTIONS.index(e["a"]["action"]), duel_env.ACTIONS.index(e["b"]["action"])) for _, e in recorded]
        assert duel_env.play_rules_directly(actions) == tape
        for (round_number, exchange), (tape_round, tape_exchange, a, b) in zip(recorded, tape):
            assert (round_number, exchange["number"]) == (tape_round, tape_exchange)
            for record, (action, exhausted, damage) in ((exchange["a"], a), (exchange["b"], b)):
                assert record["action"] == duel_env.ACTIONS[action]
                assert record["exhausted"] == exhausted
                assert record["damage_taken"] == damage
                assert record["source"] == "bot"
        # The scripts the replay names are what each agent played.
        for side, index in (("a", 0), ("b", 1)):
            script = replay["fighters"][index]["spec"]
            assert script == "builtin:script:" + ",".join(e[side]["action"] for _, e in recorded)
        total_exchanges += len(tape)
    assert total_exchanges > 100_000


def test_a_sample_plays_the_same_in_the_referee_and_verifies(referee, tmp_path):
    env = duel_env.parallel_env(weight_class="heavy")
    rng = np.random.default_rng(4)
    checked = 0
    for seed in range(0, 10_000, 400):
        env.reset(seed=seed)
        play_random(env, rng)
        text = env.replay(accepted_at=ACCEPTED_AT)
        replay = json.loads(text)
        path = tmp_path / f"env-{seed}.json"
        path.write_text(text)
        verified = referee("replay", "verify", str(path), "--json")
        assert verified.returncode == 0, verified.stderr
        verdict = json.loads(verified.stdout)
        assert verdict["ok"] is True, verdict
        assert verdict["signature"] == {"status": "unsigned"}
        a, b = (fighter["spec"] for fighter in replay["fighters"])
        played = referee("local", a, b, "--seed", str(seed), "--class", "heavy", "--json")
        assert played.returncode == 0, played.stderr
        theirs = json.loads(played.stdout)
        assert rules_view(theirs) == rules_view(replay), f"seed {seed}"
        assert theirs["fighters"] == replay["fighters"]
        assert (theirs["seed"], theirs["class"], theirs["budget"]) == (replay["seed"], "heavy", replay["budget"])
        checked += 1
    assert checked == 25


def test_a_learner_against_a_built_in_replays_with_its_seed(referee, tmp_path):
    for opponent, learner in (("builtin:random", "a"), ("builtin:counter", "b"), ("builtin:random", "b")):
        env = duel_env.gym_env(opponent=opponent, learner=learner)
        rng = np.random.default_rng(7)
        for episode in range(4):
            _, info = env.reset(seed=100 + episode)
            over = False
            while not over:
                _, _, over, _, _ = env.step(int(rng.integers(6)))
            text = env.replay(accepted_at=ACCEPTED_AT)
            replay = json.loads(text)
            assert replay["seed"] == info["match_seed"]
            # The referee's verify plays the built-in again from the seed too.
            path = tmp_path / f"gym-{opponent[8:]}-{learner}-{episode}.json"
            path.write_text(text)
            verified = referee("replay", "verify", str(path), "--json")
            assert verified.returncode == 0, verified.stdout + verified.stderr
            opponent_index = 1 if learner == "a" else 0
            assert replay["fighters"][opponent_index]["spec"] == opponent
            a, b = (fighter["spec"] for fighter in replay["fighters"])
            played = referee("local", a, b, "--seed", str(info["match_seed"]), "--json")
            assert played.returncode == 0, played.stderr
            assert rules_view(json.loads(played.stdout)) == rules_view(replay), (opponent, learner, episode)


def test_a_signed_replay_verifies_against_its_key(referee, tmp_path):
    env = duel_env.parallel_env()
    env.reset(seed=3)
    play_random(env, np.random.default_rng(3))
    key = tmp_path / "keys" / "signing.key"
    text = env.replay(accepted_at=ACCEPTED_AT, signing_key=key)
    assert key.is_file() and (key.stat().st_mode & 0o077) == 0
    signed = json.loads(text)
    assert signed["signature"]["alg"] == "ed25519"
    path = tmp_path / "signed.json"
    path.write_text(text)
    verified = referee("replay", "verify", str(path), "--json", "--public-key", signed["signature"]["key"])
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["signature"]["status"] == "valid"
    # The same key signs the next replay (it is loaded, not replaced).
    assert json.loads(env.replay(accepted_at=ACCEPTED_AT, signing_key=str(key)))["signature"]["key"] == signed["signature"]["key"]
    # A replay edited after signing fails.
    signed["rounds"][0]["exchanges"][0]["a"]["hp"] += 1
    path.write_text(json.dumps(signed))
    refused = referee("replay", "verify", str(path), "--json")
    assert refused.returncode != 0


def test_replay_errors_are_one_line_and_leave_the_env_usable(tmp_path):
    env = duel_env.parallel_env()
    with pytest.raises(RuntimeError, match="not over"):
        env.replay()
    env.reset(seed=1)
    env.step({"a": 0, "b": 2})
    with pytest.raises(RuntimeError, match="not over"):
        env.replay()
    play_random(env, np.random.default_rng(1))
    with pytest.raises(ValueError, match="RFC 3339"):
        env.replay(accepted_at="yesterday")
    with pytest.raises(TypeError, match="RFC 3339"):
        env.replay(accepted_at=20261207)
    not_a_file = tmp_path / "folder"
    not_a_file.mkdir()
    with pytest.raises(OSError, match="signing key"):
        env.replay(signing_key=not_a_file)
    assert json.loads(env.replay())["seed"] == 1
    env.reset(seed=2**53)
    play_random(env, np.random.default_rng(2))
    with pytest.raises(ValueError, match=r"2\^53"):
        env.replay()
    env.reset(seed=-1)
    play_random(env, np.random.default_rng(2))
    with pytest.raises(ValueError, match=r"2\^53"):
        env.replay()
    env.reset(seed=5)
    play_random(env, np.random.default_rng(5))
    assert json.loads(env.replay())["seed"] == 5

    gym = duel_env.gym_env()
    with pytest.raises(RuntimeError, match="not started"):
        gym.replay()
    gym.reset(seed=0)
    with pytest.raises(RuntimeError, match="not over"):
        gym.replay()
