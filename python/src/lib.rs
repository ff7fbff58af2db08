//! The extension module `duel_env._native`: the env's engine (`duel-env`, over
//! the referee's own `duel-rules` and `duel-builtin`) behind PyO3. The
//! PettingZoo and Gymnasium classes live in Python (`duel_env/__init__.py`)
//! and call this for every exchange: `Duel` for two learners, `Solo` for one
//! against a built-in fighter, `Batch` for n matches of two learners stepped
//! in one call (`vector_env`).
//!
//! Every entry point runs inside [`guarded`]: a Rust panic becomes
//! `duel_env.EngineError` (a one-line `RuntimeError`) instead of unwinding into
//! the interpreter, and the match that panicked refuses to step until reset.

use std::panic::{AssertUnwindSafe, catch_unwind};

use duel_builtin::BuiltinSpec;
use duel_env::{
    ACTIONS, HEADER_FIELDS, OBSERVATION_LEN, Rewards, TAPE_FIELDS, TAPE_SLOTS, action_from_index,
};
use duel_rules::{Action, MatchState, Ruleset, Side, Source, TapeEntry, WeightClass};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

create_exception!(
    _native,
    EngineError,
    PyRuntimeError,
    "A bug in the engine (a Rust panic), reported instead of crossing into Python."
);

/// Runs `body`; a panic comes back as the outer `Err`, an `EngineError` with
/// the panic's message on one line.
fn caught<T>(body: impl FnOnce() -> PyResult<T>) -> Result<PyResult<T>, PyErr> {
    // AssertUnwindSafe: after a panic a match is marked broken (see
    // `Duel::guarded_mut`), so no half-updated state is ever used as valid.
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
        EngineError::new_err(format!(
            "internal error in the duel engine (a bug, please report it): {line}"
        ))
    })
}

/// [`caught`] with both errors as one.
fn guarded<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    caught(body).unwrap_or_else(Err)
}

fn parse_ruleset(version: &str) -> PyResult<Ruleset> {
    Ruleset::from_version(version).map_err(|error| PyValueError::new_err(error.to_string()))
}

fn parse_class(name: &str) -> PyResult<WeightClass> {
    name.parse::<WeightClass>()
        .map_err(|error| PyValueError::new_err(error.to_string()))
}

fn parse_action(agent: &str, index: i64) -> PyResult<Action> {
    usize::try_from(index)
        .ok()
        .and_then(action_from_index)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "action {index} for agent {agent:?} is out of range (expected 0..=5: JAB, HEAVY, BLOCK, DODGE, FEINT, RECOVER)"
            ))
        })
}

fn parse_side(name: &str) -> PyResult<Side> {
    Side::BOTH
        .into_iter()
        .find(|side| side.name() == name)
        .ok_or_else(|| {
            PyValueError::new_err(format!("unknown side {name:?} (expected \"a\" or \"b\")"))
        })
}

fn parse_opponent(spec: &str) -> PyResult<BuiltinSpec> {
    BuiltinSpec::parse(spec).map_err(|error| {
        // One line whatever the text holds: it is echoed back.
        let shown: String = spec
            .chars()
            .take(80)
            .collect::<String>()
            .escape_debug()
            .to_string();
        PyValueError::new_err(format!(
            "opponent \"{shown}\": {error} (this version plays built-in opponents only)"
        ))
    })
}

fn rewards(round_reward: f32, match_reward: f32) -> PyResult<Rewards> {
    if !round_reward.is_finite() || !match_reward.is_finite() {
        return Err(PyValueError::new_err(format!(
            "rewards must be finite numbers (round_reward={round_reward}, match_reward={match_reward})"
        )));
    }
    Ok(Rewards {
        per_round: round_reward,
        per_match: match_reward,
    })
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect()
}

/// A finished match's replay as the JSON text the referee writes, signed
/// with the key at `signing_key` when one is named (made there if missing,
/// as the referee makes its own).
fn replay_text(
    replay: Result<duel_replays::Replay, duel_env::EnvError>,
    signing_key: Option<&str>,
) -> PyResult<String> {
    let mut replay = replay.map_err(|error| match error {
        duel_env::EnvError::NotOver => PyRuntimeError::new_err(error.to_string()),
        _ => PyValueError::new_err(error.to_string()),
    })?;
    if let Some(path) = signing_key {
        let (key, _created) = duel_replays::load_or_create_signing_key(std::path::Path::new(path))
            .map_err(|error| PyOSError::new_err(error.to_string()))?;
        duel_replays::sign(&mut replay, &key)
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
    }
    Ok(replay.to_json_pretty())
}

/// Refuses a replay of a match an engine error interrupted.
fn check_whole(broken: bool) -> PyResult<()> {
    if broken {
        return Err(PyRuntimeError::new_err(
            "this match was interrupted by an engine error: it has no replay",
        ));
    }
    Ok(())
}

/// A round's or a match's result as Python sees it: (winner, how).
type Verdict = Option<(&'static str, &'static str)>;

/// One side of a tape entry: (action number, exhausted, damage taken).
type PySide = (usize, bool, i32);

fn tape_tuple(entry: &TapeEntry) -> (u8, u8, PySide, PySide) {
    let side = |index: usize| {
        let side = entry.sides[index];
        (
            duel_env::action_index(side.action),
            side.exhausted,
            side.damage_taken,
        )
    };
    (entry.round, entry.exchange, side(0), side(1))
}

/// One match between two learners, stepped with both actions at once.
#[pyclass(module = "duel_env._native")]
#[derive(Debug)]
struct Duel {
    inner: duel_env::Duel,
    /// A panic interrupted this match: it steps again only after a reset.
    broken: bool,
}

impl Duel {
    fn guarded_mut<T>(
        &mut self,
        body: impl FnOnce(&mut duel_env::Duel) -> PyResult<T>,
    ) -> PyResult<T> {
        caught(|| body(&mut self.inner)).unwrap_or_else(|panicked| {
            self.broken = true;
            Err(panicked)
        })
    }
}

#[pymethods]
impl Duel {
    #[new]
    #[pyo3(signature = (ruleset = "1.0.0", weight_class = "middle", round_reward = 0.5, match_reward = 1.0))]
    fn new(
        ruleset: &str,
        weight_class: &str,
        round_reward: f32,
        match_reward: f32,
    ) -> PyResult<Duel> {
        guarded(|| {
            let ruleset = parse_ruleset(ruleset)?;
            let class = parse_class(weight_class)?;
            let rewards = rewards(round_reward, match_reward)?;
            Ok(Duel {
                inner: duel_env::Duel::new(ruleset, class, rewards),
                broken: false,
            })
        })
    }

    /// Starts a new match; `match_id` is what the fighters' observations name it.
    fn reset(&mut self, match_id: &str) -> PyResult<()> {
        self.guarded_mut(|duel| {
            duel.reset(match_id);
            Ok(())
        })?;
        self.broken = false;
        Ok(())
    }

    /// Plays one exchange. Returns ((reward_a, reward_b), match_over,
    /// (exhausted_a, exhausted_b), round verdict or None, match verdict or None).
    #[allow(clippy::type_complexity)]
    fn step(
        &mut self,
        a: i64,
        b: i64,
    ) -> PyResult<((f32, f32), bool, (bool, bool), Verdict, Verdict)> {
        if self.broken {
            return Err(PyRuntimeError::new_err(
                "this match was interrupted by an engine error: call reset() first",
            ));
        }
        let actions = [parse_action("a", a)?, parse_action("b", b)?];
        self.guarded_mut(|duel| {
            let step = duel.step(actions).map_err(|_| {
                PyRuntimeError::new_err("the match is over: call reset() before stepping again")
            })?;
            let exchange = step.exchange;
            let sides = exchange.outcome.sides;
            Ok((
                (step.rewards[0], step.rewards[1]),
                exchange.match_result.is_some(),
                (sides[0].exhausted, sides[1].exhausted),
                exchange
                    .round_result
                    .map(|round| (round.winner.name(), round.by.name())),
                exchange
                    .match_result
                    .map(|result| (result.winner.name(), result.decided_by.name())),
            ))
        })
    }

    /// Both fighters' observation vectors, `a` then `b`, as little-endian f32.
    fn observations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = guarded(|| {
            let mut both = [0.0_f32; 2 * OBSERVATION_LEN];
            let (a, b) = both.split_at_mut(OBSERVATION_LEN);
            let a: &mut [f32; OBSERVATION_LEN] = a.try_into().expect("half of 2 * OBSERVATION_LEN");
            let b: &mut [f32; OBSERVATION_LEN] = b.try_into().expect("half of 2 * OBSERVATION_LEN");
            self.inner.observe(Side::A, a);
            self.inner.observe(Side::B, b);
            Ok(f32_bytes(&both))
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Which actions each fighter can pay for, `a`'s six then `b`'s, as 0/1 bytes.
    fn affordable<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = guarded(|| {
            let mut mask = [0_u8; 12];
            for (index, side) in Side::BOTH.into_iter().enumerate() {
                for (slot, can) in self.inner.affordable(side).into_iter().enumerate() {
                    mask[index * 6 + slot] = u8::from(can);
                }
            }
            Ok(mask)
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    #[getter]
    fn is_over(&self) -> bool {
        self.inner.is_over()
    }

    #[getter]
    fn ruleset(&self) -> &'static str {
        self.inner.ruleset().version()
    }

    #[getter]
    fn weight_class(&self) -> &'static str {
        self.inner.class().name()
    }

    /// The tape so far: (round, exchange, (action, exhausted, damage taken) of
    /// `a`, the same of `b`).
    fn tape(&self) -> PyResult<Vec<(u8, u8, PySide, PySide)>> {
        guarded(|| Ok(self.inner.tape().iter().map(tape_tuple).collect()))
    }

    /// The finished match as a `duel-replay/1` JSON document that `referee
    /// replay verify` accepts: both learners recorded as the scripts of what
    /// they played, `seed` and `accepted_at` (RFC 3339) in its header.
    #[pyo3(signature = (accepted_at, seed, signing_key = None))]
    fn replay(&self, accepted_at: &str, seed: u64, signing_key: Option<&str>) -> PyResult<String> {
        check_whole(self.broken)?;
        guarded(|| {
            replay_text(
                self.inner
                    .replay(duel_env::ReplayHeader { accepted_at, seed }),
                signing_key,
            )
        })
    }

    /// Exists only so the tests can prove a panic inside the engine reaches
    /// Python as `EngineError` and leaves this match refusing to step until reset.
    fn _panic_for_test(&mut self, message: &str) -> PyResult<()> {
        self.guarded_mut(|_| panic!("{message}"))
    }
}

/// The observation's bounds under `ruleset` and `weight_class`: (low, high),
/// each OBSERVATION_LEN little-endian f32.
#[pyfunction]
#[pyo3(signature = (ruleset = "1.0.0", weight_class = "middle"))]
fn bounds<'py>(
    py: Python<'py>,
    ruleset: &str,
    weight_class: &str,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let [low, high] = guarded(|| {
        Ok(duel_env::bounds(
            parse_ruleset(ruleset)?,
            parse_class(weight_class)?,
        ))
    })?;
    Ok((
        PyBytes::new(py, &f32_bytes(&low)),
        PyBytes::new(py, &f32_bytes(&high)),
    ))
}

/// Plays `actions` ((a, b) action numbers per exchange) on the rules crate's
/// `MatchState` directly, without the env, and returns its tape: what the
/// tests compare the env's tape with.
#[pyfunction]
#[pyo3(signature = (actions, ruleset = "1.0.0"))]
fn play_rules_directly(
    actions: Vec<(i64, i64)>,
    ruleset: &str,
) -> PyResult<Vec<(u8, u8, PySide, PySide)>> {
    guarded(|| {
        let mut state = MatchState::new(parse_ruleset(ruleset)?);
        let mut tape = Vec::with_capacity(actions.len());
        for (a, b) in actions {
            let step = state
                .play_exchange([parse_action("a", a)?, parse_action("b", b)?])
                .map_err(|_| PyValueError::new_err("more exchanges than the match lasted"))?;
            let sides = step.outcome.sides;
            let side = |index: usize| {
                (
                    duel_env::action_index(sides[index].action),
                    sides[index].exhausted,
                    sides[index].damage_taken,
                )
            };
            tape.push((step.round, step.exchange, side(0), side(1)));
        }
        Ok(tape)
    })
}

/// One side of a tape entry as a bot's observation carries it: (action
/// 0..=5, exhausted, source 0..=3 as bot, timeout, budget, fault, damage taken).
type BotTapeSide = (i64, bool, i64, i32);

fn tape_side(side: BotTapeSide, at: usize) -> PyResult<duel_rules::TapeSide> {
    let (action, exhausted, source, damage_taken) = side;
    let action = usize::try_from(action)
        .ok()
        .and_then(action_from_index)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "tape entry {at}: action {action} is out of range (expected 0..=5)"
            ))
        })?;
    let source = usize::try_from(source)
        .ok()
        .and_then(|index| Source::ALL.get(index).copied())
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "tape entry {at}: source {source} is out of range (expected 0..=3: bot, timeout, budget, fault)"
            ))
        })?;
    Ok(duel_rules::TapeSide {
        action,
        exhausted,
        source,
        damage_taken,
    })
}

/// The observation vector of a bot's own observation (what `duel.v1.Bot`'s
/// `Decide` or the WIT `observation` hands it), written by the same
/// `duel_env::encode` the env uses: a policy trained in the env reads the
/// same numbers in a match. `you`/`opponent` are (hp, stamina, staggered);
/// `tape` lists earlier exchanges oldest first, each (round, exchange, your
/// side, the opponent's side). Little-endian f32, OBSERVATION_LEN of them.
#[pyfunction]
#[pyo3(signature = (you, opponent, round, exchange, your_round_wins, opponent_round_wins, budget_left_tokens, tape, ruleset = "1.0.0", weight_class = "middle"))]
#[allow(clippy::too_many_arguments)]
fn encode_observation<'py>(
    py: Python<'py>,
    you: (i32, i32, bool),
    opponent: (i32, i32, bool),
    round: u8,
    exchange: u8,
    your_round_wins: u8,
    opponent_round_wins: u8,
    budget_left_tokens: u64,
    tape: Vec<(u8, u8, BotTapeSide, BotTapeSide)>,
    ruleset: &str,
    weight_class: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = guarded(|| {
        let fighter = |(hp, stamina, staggered): (i32, i32, bool)| duel_rules::FighterState {
            hp,
            stamina,
            staggered,
        };
        // Seen from the bot's side: it is `a` of this tape.
        let entries = tape
            .into_iter()
            .enumerate()
            .map(|(at, (round, exchange, mine, theirs))| {
                Ok(TapeEntry {
                    round,
                    exchange,
                    sides: [tape_side(mine, at)?, tape_side(theirs, at)?],
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let observation = duel_rules::Observation {
            ruleset: parse_ruleset(ruleset)?,
            match_id: "",
            class: parse_class(weight_class)?,
            budget_left_tokens,
            round,
            exchange,
            you: fighter(you),
            opponent: fighter(opponent),
            your_round_wins,
            opponent_round_wins,
            side: Side::A,
            tape: &entries,
        };
        let mut out = [0.0_f32; OBSERVATION_LEN];
        duel_env::encode(&observation, &mut out);
        Ok(f32_bytes(&out))
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// Which of the six actions a fighter with `stamina` can pay for under
/// `ruleset` (the env's "affordable" mask), as six 0/1 bytes.
#[pyfunction]
#[pyo3(signature = (stamina, ruleset = "1.0.0"))]
fn affordable<'py>(py: Python<'py>, stamina: i32, ruleset: &str) -> PyResult<Bound<'py, PyBytes>> {
    let ruleset = parse_ruleset(ruleset)?;
    let mask = ACTIONS.map(|action| u8::from(ruleset.can_pay(action, stamina)));
    Ok(PyBytes::new(py, &mask))
}

/// One match of a learner against a built-in fighter of the referee, the
/// built-in deciding on its own observation each exchange.
#[pyclass(module = "duel_env._native")]
#[derive(Debug)]
struct Solo {
    inner: duel_env::Solo,
    broken: bool,
}

#[pymethods]
impl Solo {
    #[new]
    #[pyo3(signature = (opponent = "builtin:counter", ruleset = "1.0.0", weight_class = "middle", round_reward = 0.5, match_reward = 1.0, learner = "a"))]
    fn new(
        opponent: &str,
        ruleset: &str,
        weight_class: &str,
        round_reward: f32,
        match_reward: f32,
        learner: &str,
    ) -> PyResult<Solo> {
        guarded(|| {
            let duel = duel_env::Duel::new(
                parse_ruleset(ruleset)?,
                parse_class(weight_class)?,
                rewards(round_reward, match_reward)?,
            );
            Ok(Solo {
                inner: duel_env::Solo::new(duel, parse_opponent(opponent)?, parse_side(learner)?),
                broken: false,
            })
        })
    }

    /// Starts a new match played with `seed` (the built-in's seed, as the
    /// referee's match seed is).
    fn reset(&mut self, match_id: &str, seed: u64) -> PyResult<()> {
        let solo = &mut self.inner;
        caught(|| {
            solo.reset(match_id, seed);
            Ok(())
        })
        .unwrap_or_else(Err)?;
        self.broken = false;
        Ok(())
    }

    /// Plays the learner's action against the built-in's. Returns (reward,
    /// match_over, exhausted, the opponent's action number, round verdict or
    /// None, match verdict or None), all from the learner's side.
    #[allow(clippy::type_complexity)]
    fn step(&mut self, action: i64) -> PyResult<(f32, bool, bool, usize, Verdict, Verdict)> {
        if self.broken {
            return Err(PyRuntimeError::new_err(
                "this match was interrupted by an engine error: call reset() first",
            ));
        }
        let learner = self.inner.learner();
        let action = parse_action(learner.name(), action)?;
        let solo = &mut self.inner;
        caught(|| {
            let step = solo.step(action).map_err(|_| {
                PyRuntimeError::new_err("the match is over: call reset() before stepping again")
            })?;
            let exchange = step.exchange;
            let mine = exchange.outcome.sides[learner.index()];
            let theirs = exchange.outcome.sides[learner.other().index()];
            Ok((
                step.rewards[learner.index()],
                exchange.match_result.is_some(),
                mine.exhausted,
                duel_env::action_index(theirs.action),
                exchange
                    .round_result
                    .map(|round| (round.winner.name(), round.by.name())),
                exchange
                    .match_result
                    .map(|result| (result.winner.name(), result.decided_by.name())),
            ))
        })
        .unwrap_or_else(|panicked| {
            self.broken = true;
            Err(panicked)
        })
    }

    /// The learner's observation vector, little-endian f32.
    fn observation<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = guarded(|| {
            let mut out = [0.0_f32; OBSERVATION_LEN];
            self.inner.duel().observe(self.inner.learner(), &mut out);
            Ok(f32_bytes(&out))
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Which actions the learner can pay for, six 0/1 bytes.
    fn affordable<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mask = guarded(|| {
            Ok(self
                .inner
                .duel()
                .affordable(self.inner.learner())
                .map(u8::from))
        })?;
        Ok(PyBytes::new(py, &mask))
    }

    #[getter]
    fn is_over(&self) -> bool {
        self.inner.duel().is_over()
    }

    #[getter]
    fn opponent(&self) -> String {
        self.inner.spec().to_string()
    }

    #[getter]
    fn learner(&self) -> &'static str {
        self.inner.learner().name()
    }

    /// The tape so far, fighter `a` first, as `Duel.tape`.
    fn tape(&self) -> PyResult<Vec<(u8, u8, PySide, PySide)>> {
        guarded(|| Ok(self.inner.duel().tape().iter().map(tape_tuple).collect()))
    }

    /// The finished match as a `duel-replay/1` JSON document: the learner
    /// recorded as the script of what it played, the built-in by its spec,
    /// and the match seed of the last `reset`, so `referee local` with both
    /// specs and `--seed` plays it again.
    #[pyo3(signature = (accepted_at, signing_key = None))]
    fn replay(&self, accepted_at: &str, signing_key: Option<&str>) -> PyResult<String> {
        check_whole(self.broken)?;
        guarded(|| replay_text(self.inner.replay(accepted_at), signing_key))
    }
}

/// Both fighters' affordable actions of `duel` into `out` (12 values, 0/1).
fn write_masks(duel: &duel_env::LeanDuel, out: &mut [i8]) {
    for (side, half) in Side::BOTH
        .into_iter()
        .zip(out.chunks_exact_mut(ACTIONS.len()))
    {
        for (slot, can) in half.iter_mut().zip(duel.affordable(side)) {
            *slot = i8::from(can);
        }
    }
}

/// Checks that `buffer` is a writable C-contiguous array of `shape`
/// (`what` names it in the one-line error).
fn check_out<T: pyo3::buffer::Element>(
    buffer: &PyBuffer<T>,
    what: &str,
    shape: &[usize],
) -> PyResult<()> {
    if buffer.shape() != shape || !buffer.is_c_contiguous() || buffer.readonly() {
        return Err(PyValueError::new_err(format!(
            "{what} must be a writable C-contiguous array of shape {shape:?}, got shape {:?}{}{}",
            buffer.shape(),
            if buffer.is_c_contiguous() {
                ""
            } else {
                ", not C-contiguous"
            },
            if buffer.readonly() { ", read-only" } else { "" },
        )));
    }
    Ok(())
}

/// `n` matches between two learners, stepped together in one call with the
/// GIL released. Auto-reset is "same-step": a match that ends in a step is
/// reset within that step; the step's observations and masks are the new
/// match's first, its final observations come back separately. The results
/// are staged here while the GIL is released, then copied in one pass into
/// the caller's arrays (the buffer protocol, abi3 from Python 3.11).
#[pyclass(module = "duel_env._native")]
#[derive(Debug)]
struct Batch {
    /// The matches: their rules state only; their tapes live in
    /// `observations` (see `duel_env::LeanDuel`).
    duels: Vec<duel_env::LeanDuel>,
    class: WeightClass,
    rewards_per: Rewards,
    started: bool,
    /// A panic interrupted a step: the batch steps again only after a reset.
    broken: bool,
    observations: Vec<f32>,
    masks: Vec<i8>,
    rewards: Vec<f32>,
    terminations: Vec<u8>,
    /// The final observations of the matches that ended in the last step, in
    /// index order (2 * OBSERVATION_LEN each).
    finals: Vec<f32>,
}

/// The caller's arrays: observations (n, 2, OBSERVATION_LEN) float32, masks
/// (n, 2, 6) int8, rewards (n, 2) float32, terminations (n,) uint8.
struct Outs {
    observations: PyBuffer<f32>,
    masks: PyBuffer<i8>,
    rewards: PyBuffer<f32>,
    terminations: PyBuffer<u8>,
}

impl Batch {
    /// The caller's four arrays, once each has the shape and layout this
    /// batch writes (a one-line `ValueError` naming the first that has not).
    fn checked_outs(
        &self,
        observations: PyBuffer<f32>,
        masks: PyBuffer<i8>,
        rewards: PyBuffer<f32>,
        terminations: PyBuffer<u8>,
    ) -> PyResult<Outs> {
        let outs = Outs {
            observations,
            masks,
            rewards,
            terminations,
        };
        self.check(&outs)?;
        Ok(outs)
    }

    fn check(&self, outs: &Outs) -> PyResult<()> {
        let n = self.duels.len();
        check_out(&outs.observations, "observations", &[n, 2, OBSERVATION_LEN])?;
        check_out(&outs.masks, "action_masks", &[n, 2, ACTIONS.len()])?;
        check_out(&outs.rewards, "rewards", &[n, 2])?;
        check_out(&outs.terminations, "terminations", &[n])
    }

    fn copy_out<'py>(&self, py: Python<'py>, outs: &Outs) -> PyResult<Bound<'py, PyBytes>> {
        outs.observations.copy_from_slice(py, &self.observations)?;
        outs.masks.copy_from_slice(py, &self.masks)?;
        outs.rewards.copy_from_slice(py, &self.rewards)?;
        outs.terminations.copy_from_slice(py, &self.terminations)?;
        Ok(PyBytes::new(py, &f32_bytes(&self.finals)))
    }

    fn reset_all(&mut self) {
        let class = self.class;
        for ((duel, observations), masks) in self
            .duels
            .iter_mut()
            .zip(self.observations.chunks_exact_mut(2 * OBSERVATION_LEN))
            .zip(self.masks.chunks_exact_mut(2 * ACTIONS.len()))
        {
            duel.reset(class, observations);
            write_masks(duel, masks);
        }
        self.rewards.fill(0.0);
        self.terminations.fill(0);
        self.finals.clear();
    }

    fn step_all(&mut self, actions: &[[Action; 2]]) {
        self.finals.clear();
        let (class, per) = (self.class, self.rewards_per);
        let duels = self.duels.iter_mut();
        let observations = self.observations.chunks_exact_mut(2 * OBSERVATION_LEN);
        let masks = self.masks.chunks_exact_mut(2 * ACTIONS.len());
        let rewards = self.rewards.chunks_exact_mut(2);
        for (((((duel, actions), observations), masks), rewards), termination) in duels
            .zip(actions)
            .zip(observations)
            .zip(masks)
            .zip(rewards)
            .zip(self.terminations.iter_mut())
        {
            let step = duel
                .step(*actions, &per, class, observations)
                .expect("a batch's matches are reset as soon as they end");
            rewards.copy_from_slice(&step.rewards);
            let over = step.exchange.match_result.is_some();
            *termination = u8::from(over);
            if over {
                self.finals.extend_from_slice(observations);
                duel.reset(class, observations);
            }
            write_masks(duel, masks);
        }
    }

    /// Runs `body` on the batch with the GIL released; a panic marks it broken.
    fn detached(&mut self, py: Python<'_>, body: impl FnOnce(&mut Batch) + Send) -> PyResult<()> {
        let this = &mut *self;
        let result = py.detach(|| {
            caught(|| {
                body(this);
                Ok(())
            })
        });
        result.unwrap_or_else(|panicked| {
            self.broken = true;
            Err(panicked)
        })
    }
}

#[pymethods]
impl Batch {
    #[new]
    #[pyo3(signature = (n, ruleset = "1.0.0", weight_class = "middle", round_reward = 0.5, match_reward = 1.0))]
    fn new(
        n: i64,
        ruleset: &str,
        weight_class: &str,
        round_reward: f32,
        match_reward: f32,
    ) -> PyResult<Batch> {
        guarded(|| {
            let n = usize::try_from(n)
                .ok()
                .filter(|n| (1..=1 << 20).contains(n))
                .ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "n must be between 1 and 1048576 matches, got {n}"
                    ))
                })?;
            let (ruleset, class) = (parse_ruleset(ruleset)?, parse_class(weight_class)?);
            let rewards = rewards(round_reward, match_reward)?;
            Ok(Batch {
                duels: vec![duel_env::LeanDuel::new(ruleset); n],
                class,
                rewards_per: rewards,
                started: false,
                broken: false,
                observations: vec![0.0; n * 2 * OBSERVATION_LEN],
                masks: vec![0; n * 2 * ACTIONS.len()],
                rewards: vec![0.0; n * 2],
                terminations: vec![0; n],
                finals: Vec::new(),
            })
        })
    }

    #[getter]
    fn n(&self) -> usize {
        self.duels.len()
    }

    /// Starts a new match in every slot and writes what `step` writes (zero
    /// rewards, no terminations) into the arrays; returns no final observations.
    fn reset<'py>(
        &mut self,
        py: Python<'py>,
        observations: PyBuffer<f32>,
        masks: PyBuffer<i8>,
        rewards: PyBuffer<f32>,
        terminations: PyBuffer<u8>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let outs = self.checked_outs(observations, masks, rewards, terminations)?;
        self.detached(py, Batch::reset_all)?;
        self.started = true;
        self.broken = false;
        self.copy_out(py, &outs)
    }

    /// Plays one exchange in every match. `actions` holds 2 * n bytes, match
    /// by match, fighter `a` first, each 0..=5. Writes the observations,
    /// masks, rewards and terminations into the arrays and returns the final
    /// observations of the matches that ended (little-endian f32, index
    /// order). Everything is checked before any match moves: a bad call
    /// changes nothing.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: &[u8],
        observations: PyBuffer<f32>,
        masks: PyBuffer<i8>,
        rewards: PyBuffer<f32>,
        terminations: PyBuffer<u8>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if self.broken {
            return Err(PyRuntimeError::new_err(
                "this batch was interrupted by an engine error: call reset() first",
            ));
        }
        if !self.started {
            return Err(PyRuntimeError::new_err(
                "the batch is not started: call reset() before step()",
            ));
        }
        let n = self.duels.len();
        if actions.len() != 2 * n {
            return Err(PyValueError::new_err(format!(
                "step needs 2 * n = {} action bytes, got {}",
                2 * n,
                actions.len()
            )));
        }
        let outs = self.checked_outs(observations, masks, rewards, terminations)?;
        let mut parsed = Vec::with_capacity(n);
        for (index, pair) in actions.chunks_exact(2).enumerate() {
            parsed.push([
                parse_action(&format!("a of match {index}"), i64::from(pair[0]))?,
                parse_action(&format!("b of match {index}"), i64::from(pair[1]))?,
            ]);
        }
        self.detached(py, |batch| batch.step_all(&parsed))?;
        self.copy_out(py, &outs)
    }

    /// Bytes the engine holds per match beyond the observation arrays (and
    /// their staging copy, which also holds the match's tape): the match's
    /// rules state and its share of the staged masks, rewards and
    /// terminations.
    fn bytes_per_match(&self) -> usize {
        std::mem::size_of::<duel_env::LeanDuel>()
            + 2 * ACTIONS.len() * std::mem::size_of::<i8>()
            + 2 * std::mem::size_of::<f32>()
            + std::mem::size_of::<u8>()
    }
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Duel>()?;
    module.add_class::<Solo>()?;
    module.add_class::<Batch>()?;
    module.add_function(wrap_pyfunction!(bounds, module)?)?;
    module.add_function(wrap_pyfunction!(play_rules_directly, module)?)?;
    module.add_function(wrap_pyfunction!(encode_observation, module)?)?;
    module.add_function(wrap_pyfunction!(affordable, module)?)?;
    module.add("EngineError", module.py().get_type::<EngineError>())?;
    module.add("OBSERVATION_LEN", OBSERVATION_LEN)?;
    module.add("TAPE_SLOTS", TAPE_SLOTS)?;
    module.add("HEADER_FIELDS", HEADER_FIELDS.to_vec())?;
    module.add("TAPE_FIELDS", TAPE_FIELDS.to_vec())?;
    module.add("ACTIONS", ACTIONS.map(Action::name).to_vec())?;
    module.add("RULESETS", Ruleset::ALL.map(Ruleset::version).to_vec())?;
    module.add(
        "WEIGHT_CLASSES",
        WeightClass::ALL.map(WeightClass::name).to_vec(),
    )?;
    Ok(())
}
