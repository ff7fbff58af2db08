"""The batched env: the same results as independent Parallel envs stepped with
the same actions (across auto-resets), bad input answered by one-line
ValueErrors that change nothing, and deterministic resets."""

import numpy as np
import pytest

import duel_env

N = 7


def parallel_observations(observations):
    vectors = np.stack([observations[agent]["observation"] for agent in duel_env.AGENTS])
    masks = np.stack([observations[agent]["action_mask"] for agent in duel_env.AGENTS])
    return vectors, masks


def test_batch_equals_independent_parallel_envs_across_auto_resets():
    batch = duel_env.vector_env(N)
    envs = [duel_env.parallel_env() for _ in range(N)]
    observations, masks = batch.reset(seed=5)
    for index, env in enumerate(envs):
        vectors, env_masks = parallel_observations(env.reset(seed=5)[0])
        np.testing.assert_array_equal(observations[index], vectors)
        np.testing.assert_array_equal(masks[index], env_masks)
    rng = np.random.default_rng(11)
    ended = 0
    # 120 exchanges: every match ends (36 exchanges at most) and restarts.
    for _ in range(120):
        actions = rng.integers(0, 6, size=(N, 2))
        observations, masks, rewards, terminations = batch.step(actions)
        for index, env in enumerate(envs):
            got, env_rewards, env_terms, env_truncs, _ = env.step(
                {"a": int(actions[index, 0]), "b": int(actions[index, 1])}
            )
            assert rewards[index].tolist() == [env_rewards["a"], env_rewards["b"]]
            assert bool(terminations[index]) == env_terms["a"] == env_terms["b"]
            assert not env_truncs["a"]
            vectors, env_masks = parallel_observations(got)
            if terminations[index]:
                ended += 1
                np.testing.assert_array_equal(batch.final_observations[index], vectors)
                vectors, env_masks = parallel_observations(env.reset()[0])
            np.testing.assert_array_equal(observations[index], vectors)
            np.testing.assert_array_equal(masks[index], env_masks)
    assert ended >= 2 * N


def test_arrays_have_the_documented_shapes_and_dtypes():
    batch = duel_env.BatchEnv(3)
    batch.reset()
    assert batch.observations.shape == (3, 2, duel_env.OBSERVATION_LEN)
    assert batch.observations.dtype == np.float32
    assert batch.action_masks.shape == (3, 2, 6) and batch.action_masks.dtype == np.int8
    assert batch.rewards.shape == (3, 2) and batch.rewards.dtype == np.float32
    assert batch.terminations.shape == (3,) and batch.terminations.dtype == np.bool_
    assert batch.metadata["autoreset_mode"] == duel_env.AUTORESET_MODE == "same-step"
    assert batch.single_observation_space["observation"].contains(batch.observations[0, 0])


@pytest.mark.parametrize(
    "actions",
    [
        np.zeros((N, 3), dtype=np.int64),
        np.zeros((N + 1, 2), dtype=np.int64),
        np.zeros(2 * N, dtype=np.int64),
        np.zeros((N, 2, 1), dtype=np.int64),
        np.zeros((N, 2), dtype=np.float32),
        np.zeros((N, 2), dtype=np.bool_),
        np.full((N, 2), 6),
        np.full((N, 2), -1),
        np.full((N, 2), 2**40),
        [[0, 0]] * (N - 1),
        "JAB",
    ],
    ids=["cols", "rows", "flat", "3d", "float", "bool", "six", "negative", "huge", "list", "str"],
)
def test_bad_actions_raise_one_line_value_errors_and_change_nothing(actions):
    batch = duel_env.vector_env(N)
    reference = duel_env.vector_env(N)
    batch.reset()
    reference.reset()
    before = batch.observations.copy()
    with pytest.raises(ValueError) as error:
        batch.step(actions)
    assert "\n" not in str(error.value)
    np.testing.assert_array_equal(batch.observations, before)
    # Still usable, and exactly where it was.
    good = np.ones((N, 2), dtype=np.int64)
    batch.step(good)
    reference.step(good)
    np.testing.assert_array_equal(batch.observations, reference.observations)
    np.testing.assert_array_equal(batch.rewards, reference.rewards)


def native_outs(n):
    return [
        np.zeros((n, 2, duel_env.OBSERVATION_LEN), dtype=np.float32),
        np.zeros((n, 2, 6), dtype=np.int8),
        np.zeros((n, 2), dtype=np.float32),
        np.zeros(n, dtype=np.uint8),
    ]


def test_native_step_checks_its_bytes_too():
    native = duel_env.Batch(2)
    outs = native_outs(2)
    native.reset(*outs)
    with pytest.raises(ValueError, match="4 action bytes"):
        native.step(bytes(3), *outs)
    with pytest.raises(ValueError, match="out of range"):
        native.step(bytes([0, 0, 0, 6]), *outs)
    native.step(bytes(4), *outs)


@pytest.mark.parametrize(
    "slot, bad",
    [
        (0, np.zeros((2, 2, duel_env.OBSERVATION_LEN + 1), dtype=np.float32)),
        (0, np.zeros((3, 2, duel_env.OBSERVATION_LEN), dtype=np.float32)),
        (0, np.zeros((2, duel_env.OBSERVATION_LEN, 2), dtype=np.float32).transpose(0, 2, 1)),
        (1, np.zeros((2, 2, 5), dtype=np.int8)),
        (2, np.zeros((2, 3), dtype=np.float32)),
        (3, np.zeros(3, dtype=np.uint8)),
    ],
    ids=["obs-width", "obs-rows", "obs-strided", "masks", "rewards", "terminations"],
)
def test_observation_arrays_of_the_wrong_shape_raise_and_change_nothing(slot, bad):
    native = duel_env.Batch(2)
    outs = native_outs(2)
    native.reset(*outs)
    before = [array.copy() for array in outs]
    wrong = list(outs)
    wrong[slot] = bad
    with pytest.raises(ValueError) as error:
        native.step(bytes(4), *wrong)
    assert "\n" not in str(error.value) and "shape" in str(error.value)
    for array, kept in zip(outs, before):
        np.testing.assert_array_equal(array, kept)
    # The batch did not move: its next step is the first exchange.
    native.step(bytes(4), *outs)
    reference = duel_env.Batch(2)
    expected = native_outs(2)
    reference.reset(*expected)
    reference.step(bytes(4), *expected)
    for array, wanted in zip(outs, expected):
        np.testing.assert_array_equal(array, wanted)


def test_read_only_or_wrong_dtype_arrays_are_refused():
    native = duel_env.Batch(2)
    outs = native_outs(2)
    native.reset(*outs)
    frozen = outs[0].copy()
    frozen.flags.writeable = False
    with pytest.raises((ValueError, BufferError, TypeError)):
        native.step(bytes(4), frozen, *outs[1:])
    with pytest.raises((ValueError, BufferError, TypeError)):
        native.step(bytes(4), outs[0].astype(np.float64), *outs[1:])
    native.step(bytes(4), *outs)


def test_bad_construction_and_order():
    for n in (0, -1, 2**21):
        with pytest.raises(ValueError):
            duel_env.BatchEnv(n)
    with pytest.raises(ValueError):
        duel_env.BatchEnv("4")
    with pytest.raises(ValueError):
        duel_env.BatchEnv(2, weight_class="giant")
    with pytest.raises(RuntimeError, match="reset"):
        duel_env.BatchEnv(2).step(np.zeros((2, 2), dtype=np.int64))


def test_reset_is_deterministic():
    def run(seed):
        batch = duel_env.vector_env(4)
        batch.reset(seed=seed)
        rng = np.random.default_rng(3)
        trace = []
        for _ in range(50):
            observations, masks, rewards, terminations = batch.step(rng.integers(0, 6, size=(4, 2)))
            trace.append((observations.copy(), masks.copy(), rewards.copy(), terminations.copy()))
        return trace

    first, second = run(9), run(9)
    for left, right in zip(first, second):
        for a, b in zip(left, right):
            np.testing.assert_array_equal(a, b)
    # A reset mid-way starts every match afresh.
    batch = duel_env.vector_env(4)
    initial = batch.reset(seed=1)[0].copy()
    batch.step(np.zeros((4, 2), dtype=np.int64))
    np.testing.assert_array_equal(batch.reset(seed=1)[0], initial)


def test_memory_per_match_is_reported():
    assert 0 < duel_env.BatchEnv(4).bytes_per_match() < 4096
