//! The bookkeeping of one match, shared by every runner: builds observations,
//! applies substitutions and the token budget, plays exchanges through the rules,
//! and writes the replay as it goes.

use std::time::Duration;

use duel_replays::transcript::{TranscriptCall, TranscriptDecision, TranscriptMessage};
use duel_replays::{
    ExchangeRecord, FORMAT, FighterInfo, MatchResultRecord, ModelPrice, Replay, RoundRecord,
    RoundResultRecord, SideRecord, Transcript,
};
use duel_rules::{
    Action, ExchangeStep, MatchState, Observation, Ruleset, Side, Source, TapeEntry, WeightClass,
};

use crate::bot::Decision;
use crate::limits::{
    DECISION_WALL_CLOCK, MAX_LOG_BYTES_PER_DECISION, MAX_LOG_BYTES_PER_MATCH, MAX_LOG_LINE_BYTES,
    MAX_LOG_LINES_PER_DECISION, MAX_REASON_BYTES, MAX_TRANSCRIPT_BYTES_PER_DECISION,
    MAX_TRANSCRIPT_BYTES_PER_MATCH, TRANSCRIPT_MESSAGE_FRAMING_BYTES,
};
use crate::opening::Opening;
use duel_gateway::meter::ModelCall;

/// Everything fixed when a match is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchConfig {
    pub ruleset: Ruleset,
    pub match_id: String,
    /// RFC 3339.
    pub accepted_at: String,
    pub class: WeightClass,
    pub seed: u64,
    /// Per decision; the rules fix 10 s, tests may shorten it.
    pub decision_wall_clock: Duration,
    /// Exchanges forced for both fighters at the start (tournament and SPRT
    /// openings); the fighters are not asked for them.
    pub opening: Opening,
    /// Keep what each model call sent and received (`duel-transcript/1`) and
    /// sign each decision's digest into the replay (`transcript_sha256`).
    pub keep_transcript: bool,
    /// The recorded match this one plays on from, when it is a fork: the
    /// runner copies the parent's exchanges before the fork point
    /// ([`MatchRecorder::commit_recorded`]) and the replay names its parent.
    pub fork: Option<std::sync::Arc<crate::fork::ForkStart>>,
}

impl MatchConfig {
    /// A match under the current ruleset and the rules' wall clock.
    pub fn new(
        match_id: String,
        accepted_at: String,
        class: WeightClass,
        seed: u64,
    ) -> MatchConfig {
        MatchConfig {
            ruleset: Ruleset::CURRENT,
            match_id,
            accepted_at,
            class,
            seed,
            decision_wall_clock: DECISION_WALL_CLOCK,
            opening: Opening::none(),
            keep_transcript: true,
            fork: None,
        }
    }

    pub fn budget_tokens(&self) -> u64 {
        self.ruleset.budget_tokens(self.class)
    }
}

/// What one fighter did in one exchange, before the rules resolve it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub decision: Option<Decision>,
    pub latency_ms: u64,
    /// The same at microsecond resolution, when the runner timed the decision
    /// (the clockless runner of built-in bots does not).
    pub latency_us: Option<u64>,
}

impl Answer {
    /// The runner did not ask: the fighter is gassed out.
    pub fn not_asked() -> Answer {
        Answer {
            decision: None,
            latency_ms: 0,
            latency_us: None,
        }
    }

    /// Asked without timing it (latency_ms as given, no microseconds).
    pub fn asked(decision: Decision, latency_ms: u64) -> Answer {
        Answer {
            decision: Some(decision),
            latency_ms,
            latency_us: None,
        }
    }

    /// Asked and answered after `elapsed`.
    pub fn timed(decision: Decision, elapsed: std::time::Duration) -> Answer {
        Answer {
            decision: Some(decision),
            latency_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            latency_us: Some(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)),
        }
    }
}

/// The state of a match being played and its replay so far.
#[derive(Debug)]
pub struct MatchRecorder {
    config: MatchConfig,
    state: MatchState,
    tape: Vec<TapeEntry>,
    rounds: Vec<RoundRecord>,
    current_round: Vec<ExchangeRecord>,
    fighters: [FighterInfo; 2],
    tokens_used: [u64; 2],
    gassed_out: [bool; 2],
    /// Log bytes kept so far per fighter, against [`MAX_LOG_BYTES_PER_MATCH`].
    log_bytes: [usize; 2],
    /// Each catalogue model some call named, in order of first call.
    models: Vec<ModelPrice>,
    /// The transcript, made at the first model call when the match keeps one
    /// (a match of built-in bots never allocates it).
    transcript: Option<Transcript>,
    /// Transcript text kept so far per fighter, against
    /// [`MAX_TRANSCRIPT_BYTES_PER_MATCH`].
    transcript_bytes: [usize; 2],
    /// The model calls of the last exchange, per fighter (the tape shows
    /// them with their notes and texts).
    last_calls: [Vec<ModelCall>; 2],
}

impl MatchRecorder {
    pub fn new(config: MatchConfig, fighters: [FighterInfo; 2]) -> MatchRecorder {
        let max_exchanges = config.ruleset.max_exchanges_per_match() as usize;
        MatchRecorder {
            state: MatchState::new(config.ruleset),
            tape: Vec::with_capacity(max_exchanges),
            rounds: Vec::with_capacity(usize::from(config.ruleset.rounds_per_match())),
            current_round: Vec::with_capacity(usize::from(config.ruleset.exchanges_per_round())),
            transcript: None,
            config,
            fighters,
            tokens_used: [0; 2],
            gassed_out: [false; 2],
            log_bytes: [0; 2],
            models: Vec::new(),
            transcript_bytes: [0; 2],
            last_calls: [Vec::new(), Vec::new()],
        }
    }

    pub fn config(&self) -> &MatchConfig {
        &self.config
    }

    pub fn is_over(&self) -> bool {
        self.state.is_over()
    }

    /// Whether the runner should ask this fighter (a gassed-out one is not
    /// asked, nor anyone during the opening).
    pub fn must_ask(&self, side: Side) -> bool {
        !self.gassed_out[side.index()] && self.forced().is_none()
    }

    /// Whether `side` has gassed out: it is played on the budget to the end.
    pub fn gassed_out(&self, side: Side) -> bool {
        self.gassed_out[side.index()]
    }

    /// Whether the next exchange is one of the opening's (forced, nobody asked).
    pub fn in_opening(&self) -> bool {
        self.forced().is_some()
    }

    /// The opening's actions for the next exchange, while the opening lasts.
    fn forced(&self) -> Option<[Action; 2]> {
        self.config
            .opening
            .exchanges()
            .get(self.tape.len())
            .copied()
    }

    pub fn budget_left_tokens(&self, side: Side) -> u64 {
        self.config
            .budget_tokens()
            .saturating_sub(self.tokens_used[side.index()])
    }

    /// What `side` sees before the next exchange.
    pub fn observation(&self, side: Side) -> Observation<'_> {
        Observation::new(
            &self.state,
            side,
            &self.config.match_id,
            self.config.class,
            self.budget_left_tokens(side),
            &self.tape,
        )
    }

    /// Resolves the next exchange from both fighters' answers (`a` first) and
    /// records it. Must not be called once the match is over.
    pub fn commit(&mut self, answers: [Answer; 2]) -> ExchangeStep {
        if let Some(forced) = self.forced() {
            return self.record(forced, [None, None]);
        }
        let [answer_a, answer_b] = answers;
        let (round, exchange) = (self.state.round(), self.state.next_exchange());
        let (action_a, record_a) = self.resolve(Side::A, answer_a, (round, exchange));
        let (action_b, record_b) = self.resolve(Side::B, answer_b, (round, exchange));
        self.record([action_a, action_b], [Some(record_a), Some(record_b)])
    }

    /// Copies an exchange of a fork's parent, as recorded (every field, byte
    /// for byte): plays its actions through the rules, and counts what each
    /// side spent and whether it gassed out, as the parent's match did. The
    /// model prices of its calls come from the parent's header (`models`).
    /// Must not be called once the match is over.
    pub fn commit_recorded(
        &mut self,
        exchange: &ExchangeRecord,
        models: &[ModelPrice],
    ) -> ExchangeStep {
        let chosen = [
            Action::from(exchange.a.action),
            Action::from(exchange.b.action),
        ];
        let step = self.play(chosen);
        for side in [Side::A, Side::B] {
            let record = exchange.sides()[side.index()];
            self.last_calls[side.index()].clear();
            let refused = record
                .calls()
                .iter()
                .any(|call| call.outcome == duel_replays::CallOutcome::Refused);
            self.spend(side, record.tokens, refused);
            if Source::from(record.source) == Source::Budget {
                self.gassed_out[side.index()] = true;
            }
            self.log_bytes[side.index()] = self.log_bytes[side.index()]
                .saturating_add(record.log().iter().map(String::len).sum::<usize>());
            for call in record.calls() {
                if let Some(price) = models.iter().find(|price| price.name == call.model)
                    && !self.models.iter().any(|known| known.name == price.name)
                {
                    self.models.push(price.clone());
                }
            }
        }
        self.push_exchange(&step, exchange.a.clone(), exchange.b.clone());
        step
    }

    /// The model calls `side` made in the last exchange, with why each that
    /// gave nothing did (and what was said, when the match keeps a
    /// transcript).
    pub fn last_calls(&self, side: Side) -> &[ModelCall] {
        &self.last_calls[side.index()]
    }

    /// [`commit`](Self::commit) for fighters whose answers are plain actions,
    /// costing no tokens and logging nothing, untimed (built-in bots in the
    /// bare runner): `Some(action)` records exactly what
    /// `Answer::asked(Decision::action(action), 0)` would, `None` what
    /// [`Answer::not_asked`] would, without building either.
    pub fn commit_actions(&mut self, actions: [Option<Action>; 2]) -> ExchangeStep {
        if let Some(forced) = self.forced() {
            return self.record(forced, [None, None]);
        }
        let fallback = self.config.ruleset.fallback_action();
        let mut chosen = [fallback; 2];
        let mut sources = [Source::Budget; 2];
        for side in [Side::A, Side::B] {
            let index = side.index();
            if let Some(action) = actions[index] {
                self.spend(side, 0, false);
                chosen[index] = action;
                sources[index] = Source::Bot;
            }
        }
        let step = self.play(chosen);
        let [outcome_a, outcome_b] = &step.outcome.sides;
        // Each side record is written once, complete: nothing to fill in
        // later, which keeps the bare match's hot path free of rebuilding
        // (figures: docs/perf/runner.md).
        self.push_exchange(
            &step,
            SideRecord::new(chosen[0], sources[0]).with_outcome(outcome_a),
            SideRecord::new(chosen[1], sources[1]).with_outcome(outcome_b),
        );
        step
    }

    /// Plays `chosen` through the rules and records the exchange: `records`
    /// holds each fighter's side record with its outcome fields still to fill
    /// in, `None` for a fighter the opening played (source BOT, nothing spent).
    fn record(&mut self, chosen: [Action; 2], records: [Option<SideRecord>; 2]) -> ExchangeStep {
        let step = self.play(chosen);
        let [record_a, record_b] = records;
        let [outcome_a, outcome_b] = &step.outcome.sides;
        let a = record_a.unwrap_or_else(|| SideRecord::new(chosen[0], Source::Bot));
        let b = record_b.unwrap_or_else(|| SideRecord::new(chosen[1], Source::Bot));
        self.push_exchange(&step, a.with_outcome(outcome_a), b.with_outcome(outcome_b));
        step
    }

    fn play(&mut self, chosen: [Action; 2]) -> ExchangeStep {
        match self.state.play_exchange(chosen) {
            Ok(step) => step,
            // Runners check `is_over` before asking; reaching here is a runner bug.
            Err(over) => panic!("runner committed an exchange after the end: {over}"),
        }
    }

    /// Appends a played exchange to the tape and the replay, closing the round
    /// when the step says it ended.
    fn push_exchange(&mut self, step: &ExchangeStep, a: SideRecord, b: SideRecord) {
        self.tape.push(TapeEntry {
            round: step.round,
            exchange: step.exchange,
            sides: [a.tape_side(), b.tape_side()],
        });
        if self.current_round.capacity() == 0 {
            // Exactly one round's worth, once, rather than growing 4, 8, 16.
            self.current_round
                .reserve_exact(usize::from(self.config.ruleset.exchanges_per_round()));
        }
        self.current_round.push(ExchangeRecord {
            number: step.exchange,
            a,
            b,
        });
        if let Some(result) = step.round_result {
            self.rounds.push(RoundRecord {
                number: step.round,
                exchanges: std::mem::take(&mut self.current_round),
                result: RoundResultRecord {
                    winner: result.winner.into(),
                    by: result.by.into(),
                },
            });
        }
    }

    /// Adds `tokens` to what `side` spent, and gasses it out when it says so
    /// or the budget is gone.
    fn spend(&mut self, side: Side, tokens: u64, gassed_out: bool) {
        let index = side.index();
        self.tokens_used[index] = self.tokens_used[index].saturating_add(tokens);
        if gassed_out || self.tokens_used[index] >= self.config.budget_tokens() {
            self.gassed_out[index] = true;
        }
    }

    /// Applies the substitution rules and the token budget to one answer
    /// (outside the opening): the action played and its side record, outcome
    /// fields not yet filled in.
    fn resolve(&mut self, side: Side, answer: Answer, at: (u8, u8)) -> (Action, SideRecord) {
        let fallback = self.config.ruleset.fallback_action();
        self.last_calls[side.index()].clear();
        let Some(mut decision) = answer.decision else {
            let mut record = SideRecord::new(fallback, Source::Budget);
            record.latency_ms = answer.latency_ms;
            record.latency_us = answer.latency_us;
            return (fallback, record);
        };
        self.spend(side, decision.tokens, decision.gassed_out);
        let (action, source, reason) = match decision.answer {
            Ok(action) => (action, Source::Bot, None),
            Err(failure) => (
                fallback,
                failure.cause.source(),
                Some(truncate_reason(failure.reason)),
            ),
        };
        let (log, cut) = bound_log(decision.log, &mut self.log_bytes[side.index()]);
        let mut record = SideRecord::new(action, source);
        record.tokens = decision.tokens;
        record.latency_ms = answer.latency_ms;
        record.latency_us = answer.latency_us;
        record.restarted = decision.restarted;
        record.log_truncated = decision.log_truncated || cut;
        record.set_notes(reason, log);
        if !decision.calls.is_empty() {
            let calls = std::mem::take(&mut decision.calls);
            self.record_calls(side, at, &mut record, calls);
        }
        (action, record)
    }

    /// Writes a decision's model calls into its side record (and its digest,
    /// when the match keeps a transcript), notes their models for the
    /// header, and keeps them for the tape.
    fn record_calls(
        &mut self,
        side: Side,
        (round, exchange): (u8, u8),
        record: &mut SideRecord,
        calls: Vec<ModelCall>,
    ) {
        for call in &calls {
            if let Some(price) = &call.price
                && !self.models.iter().any(|known| known.name == price.name)
            {
                self.models.push(price.clone());
            }
        }
        let summary = calls.iter().map(ModelCall::record).collect();
        if self.config.keep_transcript && self.transcript.is_none() {
            self.transcript = Some(Transcript::new(self.config.match_id.clone()));
        }
        let digest = match &mut self.transcript {
            Some(transcript) => {
                let transcribed = transcribe(&calls, &mut self.transcript_bytes[side.index()]);
                let digest = duel_replays::calls_sha256(&transcribed);
                transcript.decisions.push(TranscriptDecision {
                    round,
                    exchange,
                    fighter: side.into(),
                    calls: transcribed,
                });
                Some(digest)
            }
            None => None,
        };
        record.set_calls(summary, digest);
        self.last_calls[side.index()] = calls;
    }

    /// The last exchange recorded, with its round number.
    pub fn last_exchange(&self) -> Option<(u8, &ExchangeRecord)> {
        if let Some(exchange) = self.current_round.last() {
            return Some((self.state.round(), exchange));
        }
        let round = self.rounds.last()?;
        Some((round.number, round.exchanges.last()?))
    }

    /// The finished replay. Call once the match is over.
    pub fn finish(self) -> Replay {
        self.finish_replay()
    }

    /// The transcript so far (decisions in which a fighter called a model),
    /// when the match keeps one.
    pub fn transcript(&self) -> Option<&Transcript> {
        self.transcript.as_ref()
    }

    /// The finished replay and, when the match keeps one, its transcript
    /// (empty when no fighter called a model).
    pub fn finish_with_transcript(mut self) -> (Replay, Option<Transcript>) {
        let transcript = match self.transcript.take() {
            Some(transcript) => Some(transcript),
            None if self.config.keep_transcript => {
                Some(Transcript::new(self.config.match_id.clone()))
            }
            None => None,
        };
        (self.finish_replay(), transcript)
    }

    fn finish_replay(self) -> Replay {
        let result = self.state.result();
        let (winner, round_wins, damage) = match result {
            Some(result) => (result.winner.into(), result.round_wins, result.damage),
            None => (
                duel_rules::Winner::Draw.into(),
                self.state.round_wins(),
                self.state.match_damage(),
            ),
        };
        Replay {
            format: FORMAT.into(),
            ruleset: self.config.ruleset.version().into(),
            budget: self.config.budget_tokens(),
            match_id: self.config.match_id,
            accepted_at: self.config.accepted_at,
            class: self.config.class.into(),
            seed: self.config.seed,
            wall_clock_ms: Some(
                u64::try_from(self.config.decision_wall_clock.as_millis()).unwrap_or(u64::MAX),
            ),
            season: None,
            fork: self.config.fork.as_ref().map(|fork| fork.record().clone()),
            opening: self
                .config
                .opening
                .exchanges()
                .iter()
                .map(|[a, b]| [(*a).into(), (*b).into()])
                .collect(),
            fighters: self.fighters,
            models: self.models,
            rounds: self.rounds,
            result: MatchResultRecord {
                winner,
                round_wins,
                damage,
                tokens_used: self.tokens_used,
            },
            signature: None,
        }
    }
}

/// Keeps what the replay may hold of one decision's log: each entry split into
/// lines without control characters, each line cut to [`MAX_LOG_LINE_BYTES`],
/// at most [`MAX_LOG_LINES_PER_DECISION`] lines and
/// [`MAX_LOG_BYTES_PER_DECISION`] bytes, within what is left of the fighter's
/// [`MAX_LOG_BYTES_PER_MATCH`] (`match_bytes`, updated). Says whether anything
/// was dropped or cut.
fn bound_log(entries: Vec<String>, match_bytes: &mut usize) -> (Vec<String>, bool) {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut decision_bytes = 0;
    let lines = entries
        .iter()
        .flat_map(|entry| entry.lines())
        .map(|line| line.trim_end());
    for line in lines {
        let clean: String = line
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let (line, shortened) = cut_line(clean, MAX_LOG_LINE_BYTES);
        cut |= shortened;
        let room = (MAX_LOG_BYTES_PER_DECISION - decision_bytes)
            .min(MAX_LOG_BYTES_PER_MATCH.saturating_sub(*match_bytes));
        if kept.len() == MAX_LOG_LINES_PER_DECISION || line.len() > room {
            return (kept, true);
        }
        decision_bytes += line.len();
        *match_bytes += line.len();
        kept.push(line);
    }
    (kept, cut)
}

/// `line` cut to at most `max_bytes` on a character boundary, ending in `…`
/// when cut (the mark counts towards the bound).
fn cut_line(line: String, max_bytes: usize) -> (String, bool) {
    if line.len() <= max_bytes {
        return (line, false);
    }
    let mut end = max_bytes - '…'.len_utf8();
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    (format!("{}…", &line[..end]), true)
}

/// A decision's calls as the transcript keeps them: their texts within what
/// is left of the decision's and the fighter's bounds (`match_bytes`,
/// updated), a call whose texts were cut marked `truncated`. Each message
/// also costs [`TRANSCRIPT_MESSAGE_FRAMING_BYTES`] against the bounds, so
/// that 256 empty messages a call are not free either: once nothing is
/// left, further messages are left out (and the call marked).
fn transcribe(calls: &[ModelCall], match_bytes: &mut usize) -> Vec<TranscriptCall> {
    let mut decision_bytes = 0usize;
    let room = |decision_bytes: usize, match_bytes: usize| {
        (MAX_TRANSCRIPT_BYTES_PER_DECISION.saturating_sub(decision_bytes))
            .min(MAX_TRANSCRIPT_BYTES_PER_MATCH.saturating_sub(match_bytes))
    };
    let keep = |text: &str,
                truncated: &mut bool,
                decision_bytes: &mut usize,
                match_bytes: &mut usize|
     -> String {
        let mut end = text.len().min(room(*decision_bytes, *match_bytes));
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if end < text.len() {
            *truncated = true;
        }
        *decision_bytes += end;
        *match_bytes += end;
        text[..end].to_owned()
    };
    calls
        .iter()
        .map(|call| {
            let mut truncated = false;
            let (messages, completion) = match &call.text {
                Some(text) => {
                    let mut messages = Vec::with_capacity(text.messages.len());
                    for message in &text.messages {
                        let framing = TRANSCRIPT_MESSAGE_FRAMING_BYTES + message.role.len();
                        if room(decision_bytes, *match_bytes) < framing {
                            truncated = true;
                            break;
                        }
                        decision_bytes += framing;
                        *match_bytes += framing;
                        messages.push(TranscriptMessage {
                            role: message.role.clone(),
                            content: keep(
                                &message.content,
                                &mut truncated,
                                &mut decision_bytes,
                                match_bytes,
                            ),
                        });
                    }
                    let completion = keep(
                        &text.completion,
                        &mut truncated,
                        &mut decision_bytes,
                        match_bytes,
                    );
                    (messages, completion)
                }
                None => (Vec::new(), String::new()),
            };
            TranscriptCall {
                model: call.model.to_string(),
                messages,
                completion,
                prompt_tokens: call.prompt_tokens,
                completion_tokens: call.completion_tokens,
                latency_us: call.latency_us.min(duel_replays::JSON_INTEGER_MAX),
                outcome: call.outcome,
                truncated,
            }
        })
        .collect()
}

/// Cuts a reason to [`MAX_REASON_BYTES`] on a character boundary, on one line.
fn truncate_reason(reason: String) -> String {
    let one_line = reason.replace(['\n', '\r'], " ");
    if one_line.len() <= MAX_REASON_BYTES {
        return one_line;
    }
    let mut end = MAX_REASON_BYTES;
    while !one_line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &one_line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::{BotFailure, Decision};

    fn fighter(name: &str) -> FighterInfo {
        FighterInfo {
            name: name.into(),
            kind: duel_replays::FighterKind::Builtin,
            digest: format!("sha256:{name}").into(),
            spec: None,
        }
    }

    fn recorder(opening: Opening) -> MatchRecorder {
        let mut config = MatchConfig::new(
            "match-1".to_owned(),
            "2026-11-29T12:00:00Z".to_owned(),
            WeightClass::Middle,
            1,
        );
        config.opening = opening;
        MatchRecorder::new(config, [fighter("a"), fighter("b")])
    }

    /// The plain-action path records exactly what the general path records
    /// for the same answers: through an opening, for fighters asked and not
    /// asked, across rounds.
    #[test]
    fn committed_actions_record_like_answers() {
        let opening = Opening::from(vec![
            [Action::Jab, Action::Block],
            [Action::Heavy, Action::Dodge],
        ]);
        let mut general = recorder(opening.clone());
        let mut plain = recorder(opening);
        let script = [Action::Jab, Action::Heavy, Action::Feint, Action::Recover];
        let mut turn = 0;
        while !general.is_over() {
            let actions = [
                Some(script[turn % script.len()]),
                (turn % 5 != 3).then(|| script[(turn + 1) % script.len()]),
            ];
            let answers = actions.map(|action| match action {
                Some(action) => Answer::asked(Decision::action(action), 0),
                None => Answer::not_asked(),
            });
            let step_general = general.commit(answers);
            let step_plain = plain.commit_actions(actions);
            assert_eq!(step_general, step_plain);
            turn += 1;
        }
        assert!(plain.is_over());
        let replay = general.finish();
        assert_eq!(
            replay
                .rounds
                .iter()
                .map(|round| round.exchanges.len())
                .sum::<usize>(),
            turn
        );
        assert_eq!(replay, plain.finish());
    }

    /// A failed answer plays the fallback, with its source and a one-line
    /// reason, and the outcome fields come from the rules.
    #[test]
    fn a_fault_records_the_fallback_and_its_reason() {
        let mut recorder = recorder(Opening::none());
        let step = recorder.commit([
            Answer::asked(Decision::failed(BotFailure::fault("trap:\nout of fuel")), 3),
            Answer::asked(Decision::action(Action::Jab), 1),
        ]);
        let (_, exchange) = recorder.last_exchange().expect("one exchange");
        assert_eq!(Action::from(exchange.a.action), Action::Block);
        assert_eq!(Source::from(exchange.a.source), Source::Fault);
        assert_eq!(exchange.a.reason(), Some("trap: out of fuel"));
        assert_eq!(exchange.a.latency_ms, 3);
        assert_eq!(exchange.a.hp, step.outcome.sides[0].after.hp);
        assert_eq!(exchange.b.damage_taken, step.outcome.sides[1].damage_taken);
        assert_eq!(Source::from(exchange.b.source), Source::Bot);
    }

    /// One fighter's answer in the property test: which action or failure,
    /// and what else the decision carried.
    fn arbitrary_answer() -> impl proptest::strategy::Strategy<Value = Answer> {
        use proptest::prelude::*;
        let action = prop::sample::select(vec![
            Action::Jab,
            Action::Heavy,
            Action::Feint,
            Action::Block,
            Action::Dodge,
            Action::Recover,
        ]);
        let answer = prop_oneof![
            4 => action.prop_map(Ok),
            1 => "[a-z\n]{0,12}".prop_map(|reason| Err(BotFailure::fault(reason))),
            1 => "[a-z]{0,12}".prop_map(|reason| Err(BotFailure::timeout(reason))),
        ];
        let log = prop::collection::vec("[a-z ]{0,10}", 0..3);
        let decision = (
            answer,
            0u64..40,
            any::<bool>(),
            any::<bool>(),
            log,
            any::<bool>(),
        )
            .prop_map(
                |(answer, tokens, gassed_out, restarted, log, log_truncated)| Decision {
                    answer,
                    tokens,
                    gassed_out,
                    restarted,
                    log,
                    log_truncated,
                    calls: Vec::new(),
                },
            );
        prop_oneof![
            1 => Just(Answer::not_asked()),
            2 => (decision.clone(), 0u64..3).prop_map(|(decision, latency_ms)| {
                Answer::asked(decision, latency_ms)
            }),
            2 => (decision, 0u64..5_000).prop_map(|(decision, latency_us)| {
                Answer::timed(decision, Duration::from_micros(latency_us))
            }),
        ]
    }

    proptest::proptest! {
        /// What live spectators read after each exchange is exactly that
        /// exchange in the finished replay, in its round, and each side record
        /// shows what its answer said.
        #[test]
        fn live_exchanges_are_the_replays_and_show_each_answer(
            answers in proptest::collection::vec([arbitrary_answer(), arbitrary_answer()], 36),
            opening in 0usize..3,
        ) {
            let opening = Opening::from(
                [[Action::Jab, Action::Block], [Action::Heavy, Action::Dodge]][..opening].to_vec(),
            );
            let mut recorder = recorder(opening);
            let mut live = Vec::new();
            for mut answers in answers {
                if recorder.is_over() {
                    break;
                }
                let forced = recorder.forced().is_some();
                let asked = [Side::A, Side::B].map(|side| recorder.must_ask(side));
                // The runner passes `not_asked` for a fighter it did not ask.
                for (answer, asked) in answers.iter_mut().zip(asked) {
                    if !asked {
                        *answer = Answer::not_asked();
                    }
                }
                let step = recorder.commit(answers.clone());
                let (round, exchange) = recorder.last_exchange().expect("an exchange");
                let exchange = exchange.clone();
                proptest::prop_assert_eq!(round, step.round);
                proptest::prop_assert_eq!(exchange.number, step.exchange);
                for (index, (record, answer)) in exchange.sides().into_iter().zip(&answers).enumerate() {
                    let outcome = &step.outcome.sides[index];
                    proptest::prop_assert_eq!(Action::from(record.action), outcome.action);
                    proptest::prop_assert_eq!(record.exhausted, outcome.exhausted);
                    proptest::prop_assert_eq!(record.damage_taken, outcome.damage_taken);
                    proptest::prop_assert_eq!(record.hp, outcome.after.hp);
                    proptest::prop_assert_eq!(record.stamina, outcome.after.stamina);
                    proptest::prop_assert_eq!(record.staggered, outcome.after.staggered);
                    let decision = answer.decision.as_ref().filter(|_| !forced);
                    // A forced exchange shows nothing of the answers.
                    match decision {
                        None => {
                            proptest::prop_assert_eq!(record.tokens, 0);
                            proptest::prop_assert!(record.reason().is_none());
                            proptest::prop_assert!(record.log().is_empty());
                            let source = if forced { Source::Bot } else { Source::Budget };
                            proptest::prop_assert_eq!(Source::from(record.source), source);
                        }
                        Some(decision) => {
                            proptest::prop_assert_eq!(record.tokens, decision.tokens);
                            proptest::prop_assert_eq!(record.restarted, decision.restarted);
                            proptest::prop_assert_eq!(record.log_truncated, decision.log_truncated);
                            let reason = decision.answer.as_ref().err().map(|failure| failure.reason.replace('\n', " "));
                            proptest::prop_assert_eq!(record.reason(), reason.as_deref());
                            let kept: Vec<&str> = decision.log.iter().flat_map(|entry| entry.lines()).map(str::trim_end).collect();
                            proptest::prop_assert_eq!(record.log(), kept.as_slice());
                        }
                    }
                    let (latency_ms, latency_us) = if forced {
                        (0, None)
                    } else {
                        (answer.latency_ms, answer.latency_us)
                    };
                    proptest::prop_assert_eq!(record.latency_ms, latency_ms);
                    proptest::prop_assert_eq!(record.latency_us, latency_us);
                }
                live.push((round, exchange));
            }
            proptest::prop_assert!(recorder.is_over(), "36 exchanges end any match");
            let replay = recorder.finish();
            let recorded: Vec<(u8, ExchangeRecord)> = replay
                .rounds
                .into_iter()
                .flat_map(|round| {
                    let number = round.number;
                    round.exchanges.into_iter().map(move |exchange| (number, exchange))
                })
                .collect();
            proptest::prop_assert_eq!(live, recorded);
        }
    }
}
