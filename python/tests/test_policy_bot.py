"""From a policy to a bot (issue 51, item 5): `referee new NAME --lang python
--from-env` writes an endpoint bot that plays a policy trained in the env. The
bot reads its observation with the env's own encoder: a duel.v1 Observation
encodes to the env's vector, number for number; a policy trained by the
project's train.py plays `referee local` through the referee's gRPC with every
decision its own, and each decision is the one the policy makes on the env's
observation of that moment."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types

import numpy as np
import pytest

import duel_env
from conftest import REPO


@pytest.fixture(scope="module")
def bot_pb2(tmp_path_factory):
    """The duel.v1 messages, generated from the protos as the referee generates them for a bot."""
    grpc_tools = pytest.importorskip("grpc_tools")
    del grpc_tools
    out = tmp_path_factory.mktemp("stubs")
    generated = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", str(REPO / "proto"), f"--python_out={out}",
         str(REPO / "proto/duel/v1/bot.proto")],
        capture_output=True, text=True, check=False,
    )
    assert generated.returncode == 0, generated.stderr
    spec = importlib.util.spec_from_file_location("bot_pb2_for_test", out / "duel/v1/bot_pb2.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def proto_observation(bot_pb2, vector: np.ndarray, tape, side: str, ruleset="1.0.0", weight_class=2):
    """The duel.v1 Observation the referee sends fighter `side`: the header from
    the env's facts, the tape from the env's (fighter "a" first) seen from `side`."""
    header = [int(value) for value in vector[: len(duel_env.HEADER_FIELDS)]]
    mine, theirs = (0, 1) if side == "a" else (1, 0)

    def half(entry_side):
        action, exhausted, damage = entry_side
        # Actions and sources count from 1 in duel.v1; the env's learners are always the bot (1).
        return bot_pb2.TapeSide(action=action + 1, exhausted=exhausted, source=1, damage_taken=damage)

    return bot_pb2.Observation(
        ruleset=ruleset,
        match_id="m",
        budget_left_tokens=header[10],
        round=header[6],
        exchange=header[7],
        you=bot_pb2.Fighter(hp=header[0], stamina=header[1], staggered=bool(header[2])),
        opponent=bot_pb2.Fighter(hp=header[3], stamina=header[4], staggered=bool(header[5])),
        your_round_wins=header[8],
        opponent_round_wins=header[9],
        tape=[
            bot_pb2.TapeEntry(round=r, exchange=e, you=half((a, b)[mine]), opponent=half((a, b)[theirs]))
            for r, e, a, b in tape
        ],
        **{"class": weight_class},
    )


def test_a_bots_observation_encodes_as_the_env_observes(bot_pb2):
    rng = np.random.default_rng(11)
    env = duel_env.parallel_env(weight_class="heavy")
    compared = 0
    for seed in range(150):
        observations, _ = env.reset(seed=seed)
        while True:
            tape = env.tape()
            for side in ("a", "b"):
                vector = observations[side]["observation"]
                message = proto_observation(bot_pb2, vector, tape, side, weight_class=3)
                encoded = duel_env.encode_observation(message)
                assert encoded.dtype == np.float32 and encoded.shape == (duel_env.OBSERVATION_LEN,)
                np.testing.assert_array_equal(encoded, vector)
                np.testing.assert_array_equal(
                    duel_env.affordable(message.you.stamina), observations[side]["action_mask"]
                )
                compared += 1
            if not env.agents:
                break
            observations, *_ = env.step({"a": int(rng.integers(6)), "b": int(rng.integers(6))})
    assert compared > 2_500


def test_a_bots_bad_observation_is_a_one_line_error(bot_pb2):
    env = duel_env.parallel_env()
    observations, _ = env.reset(seed=1)
    env.step({"a": 0, "b": 1})
    good = proto_observation(bot_pb2, observations["a"]["observation"], env.tape(), "a")
    unspecified = bot_pb2.Observation()
    unspecified.CopyFrom(good)
    unspecified.tape[0].you.action = 0
    with pytest.raises(ValueError, match="tape entry 0: action 0"):
        duel_env.encode_observation(unspecified)
    unknown = bot_pb2.Observation()
    unknown.CopyFrom(good)
    unknown.ruleset = "9.9.9"
    with pytest.raises(ValueError, match="9.9.9"):
        duel_env.encode_observation(unknown)
    too_late = types.SimpleNamespace(**{field: getattr(good, field) for field in (
        "you", "opponent", "exchange", "your_round_wins", "opponent_round_wins", "budget_left_tokens", "tape")},
        round=300, ruleset="1.0.0")
    with pytest.raises(OverflowError):
        duel_env.encode_observation(too_late)
    assert duel_env.encode_observation(good).shape == (duel_env.OBSERVATION_LEN,)


def load_policy_module(folder):
    spec = importlib.util.spec_from_file_location("policy_of_the_new_bot", folder / "policy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_new_policy_bot_trains_and_plays_what_it_learned(referee, tmp_path):
    folder = tmp_path / "pbot"
    made = referee("new", "pbot", "--lang", "python", "--from-env", "--dir", str(folder))
    assert made.returncode == 0, made.stderr
    for name in ("bot.py", "policy.py", "train.py", "requirements.txt", "test_bot.py", "README.md", ".gitignore"):
        assert (folder / name).is_file(), name
    requirements = (folder / "requirements.txt").read_text()
    assert f"duel-env @ file://{(REPO / 'python').resolve()}" in requirements
    assert "train.py" in made.stdout and "referee local" in made.stdout

    # Untrained: the bot says how to get a policy, and nothing plays.
    untrained = referee("local", str(folder), "builtin:random", "--json",
                        env={"DUEL_PYTHON_VENV": sys.prefix})
    assert untrained.returncode != 0
    assert "train one first" in untrained.stderr

    trained = subprocess.run(
        [sys.executable, str(folder / "train.py"), "--seconds", "4", "--evaluate", "40"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert trained.returncode == 0, trained.stderr
    assert (folder / "policy.npz").is_file()
    assert "the greedy policy against builtin:random" in trained.stdout, trained.stdout

    played = referee("local", str(folder), "builtin:random", "--json", "--seed", "3",
                     env={"DUEL_PYTHON_VENV": sys.prefix})
    assert played.returncode == 0, played.stderr
    replay = json.loads(played.stdout)
    assert replay["fighters"][0]["kind"] == "endpoint"
    # Every decision is the bot's, and is what the policy chooses on the env's
    # own observation of that moment: the match replayed in the env, the
    # policy asked at each exchange.
    policy_module = load_policy_module(folder)
    policy = policy_module.Policy.load(folder / "policy.npz")
    env = duel_env.parallel_env()
    observations, _ = env.reset(seed=3)
    for round_record in replay["rounds"]:
        for exchange in round_record["exchanges"]:
            assert exchange["a"]["source"] == "bot", exchange
            mine = observations["a"]
            expected = policy.act(mine["observation"], mine["action_mask"])
            assert exchange["a"]["action"] == duel_env.ACTIONS[expected], exchange
            actions = {side: duel_env.ACTIONS.index(exchange[side]["action"]) for side in ("a", "b")}
            observations, *_ = env.step(actions)
    assert not env.agents

    # The project's own test passes as written.
    own = subprocess.run(
        [sys.executable, str(folder / "test_bot.py")],
        capture_output=True, text=True, timeout=300, check=False,
        env={**referee.environment, "REFEREE": referee.binary, "DUEL_PYTHON_VENV": sys.prefix},
    )
    assert own.returncode == 0, own.stderr


def test_from_env_is_refused_where_it_cannot_apply(referee, tmp_path):
    rust = referee("new", "pbot", "--lang", "rust", "--from-env", "--dir", str(tmp_path / "a"))
    assert rust.returncode != 0 and "--from-env writes a Python bot" in rust.stderr
    both = referee("new", "pbot", "--lang", "python", "--from-env", "--llm", "--dir", str(tmp_path / "b"))
    assert both.returncode != 0 and "cannot be used with" in both.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
