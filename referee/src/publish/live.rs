//! Live feeds: the in-process registry of matches in progress that spectators
//! can follow. Whatever runs a match (the gRPC referee, `referee local --watch`)
//! starts a feed and publishes each exchange; the HTTP service subscribes.
//!
//! A late spectator first receives every event so far, then the live ones: the
//! history and the subscription are taken under one lock, the same lock a
//! publisher holds while it records and broadcasts, so no event is missed or
//! repeated.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use duel_replays::transcript::TranscriptDecision;
use duel_replays::{
    ClassName, ExchangeRecord, FighterInfo, MatchResultRecord, Replay, RoundResultRecord,
};
use duel_rules::ExchangeStep;
use serde::Serialize;
use tokio::sync::{Notify, broadcast};

use crate::error::RefereeError;
use crate::limits::{MAX_LIVE_EVENTS, MAX_LIVE_LISTED, MAX_LIVE_MATCHES};
use crate::record::{MatchConfig, MatchRecorder};

/// One event of a live match, as spectators receive it (JSON, tagged by `type`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum LiveEvent {
    /// The match was accepted: who fights, in which class, under which ruleset.
    Start {
        match_id: String,
        ruleset: String,
        class: ClassName,
        seed: u64,
        fighters: Box<[FighterInfo; 2]>,
    },
    /// One exchange was played; `round_result` when it ended its round.
    /// `transcript` holds what each fighter's model calls said, only on a
    /// feed its author watches alone (`referee local --watch`): public feeds
    /// never carry it.
    Exchange {
        round: u8,
        exchange: Box<ExchangeRecord>,
        #[serde(skip_serializing_if = "Option::is_none")]
        round_result: Option<RoundResultRecord>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        transcript: Vec<TranscriptDecision>,
    },
    /// The match is over; the replay is published under the same id.
    End { result: MatchResultRecord },
    /// The match stopped before its end (the referee shut down); it has no replay.
    Aborted { reason: String },
}

impl LiveEvent {
    /// The SSE event name.
    pub fn kind(&self) -> &'static str {
        match self {
            LiveEvent::Start { .. } => "start",
            LiveEvent::Exchange { .. } => "exchange",
            LiveEvent::End { .. } => "end",
            LiveEvent::Aborted { .. } => "aborted",
        }
    }

    /// Whether this event closes the feed.
    pub fn is_last(&self) -> bool {
        matches!(self, LiveEvent::End { .. } | LiveEvent::Aborted { .. })
    }

    /// The start event of a match about to be played.
    pub fn start_of_match(config: &MatchConfig, fighters: &[FighterInfo; 2]) -> LiveEvent {
        LiveEvent::Start {
            match_id: config.match_id.clone(),
            ruleset: config.ruleset.version().to_owned(),
            class: config.class.into(),
            seed: config.seed,
            fighters: Box::new(fighters.clone()),
        }
    }

    /// The start event of a match from its (possibly empty) replay header.
    pub fn start_of(replay: &Replay) -> LiveEvent {
        LiveEvent::Start {
            match_id: replay.match_id.clone(),
            ruleset: replay.ruleset.to_string(),
            class: replay.class,
            seed: replay.seed,
            fighters: Box::new(replay.fighters.clone()),
        }
    }
}

#[derive(Debug)]
struct LiveMatch {
    history: Vec<LiveEvent>,
    sender: broadcast::Sender<LiveEvent>,
    /// Woken when a spectator subscribes (`referee local --watch` waits for one).
    joined: Arc<Notify>,
}

type Registry = HashMap<String, Arc<Mutex<LiveMatch>>>;

/// The registry of live matches, cheap to clone and share.
#[derive(Clone, Debug, Default)]
pub struct LiveFeeds {
    matches: Arc<Mutex<Registry>>,
}

/// What a new spectator gets: every event so far, then the live ones. The
/// receiver closes when the match ends.
#[derive(Debug)]
pub struct Subscription {
    pub history: Vec<LiveEvent>,
    pub receiver: broadcast::Receiver<LiveEvent>,
}

/// Lock a mutex whose holder may have panicked: the data here (event lists)
/// stays consistent across any panic, so the poison is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LiveFeeds {
    pub fn new() -> LiveFeeds {
        LiveFeeds::default()
    }

    /// Opens the feed of a match, publishing `start` as its first event. The
    /// feed closes when the returned publisher is dropped.
    pub fn start(&self, match_id: &str, start: LiveEvent) -> Result<LivePublisher, RefereeError> {
        duel_replays::store::validate_id(match_id)?;
        let mut matches = lock(&self.matches);
        if matches.contains_key(match_id) {
            return Err(RefereeError::AlreadyLive {
                match_id: match_id.to_owned(),
            });
        }
        if matches.len() >= MAX_LIVE_MATCHES {
            return Err(RefereeError::TooManyLive {
                limit: MAX_LIVE_MATCHES,
            });
        }
        let (sender, _) = broadcast::channel(MAX_LIVE_EVENTS);
        let feed = Arc::new(Mutex::new(LiveMatch {
            history: Vec::new(),
            sender,
            joined: Arc::new(Notify::new()),
        }));
        matches.insert(match_id.to_owned(), Arc::clone(&feed));
        drop(matches);
        let publisher = LivePublisher {
            feeds: self.clone(),
            match_id: match_id.to_owned(),
            feed,
        };
        publisher.publish(start);
        Ok(publisher)
    }

    /// Follows a live match, or `None` if no match of that id is live.
    pub fn subscribe(&self, match_id: &str) -> Option<Subscription> {
        let feed = lock(&self.matches).get(match_id).cloned()?;
        let feed = lock(&feed);
        // A stored permit wakes a publisher that starts waiting only later.
        feed.joined.notify_one();
        Some(Subscription {
            history: feed.history.clone(),
            receiver: feed.sender.subscribe(),
        })
    }

    /// Whether a match of that id is live now.
    pub fn is_live(&self, match_id: &str) -> bool {
        lock(&self.matches).contains_key(match_id)
    }

    /// The ids of the matches live now (at most [`MAX_LIVE_LISTED`]), sorted.
    pub fn live_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.matches).keys().cloned().collect();
        ids.sort_unstable();
        ids.truncate(MAX_LIVE_LISTED);
        ids
    }
}

/// The publishing end of one live match. Dropping it closes the feed.
#[derive(Debug)]
pub struct LivePublisher {
    feeds: LiveFeeds,
    match_id: String,
    feed: Arc<Mutex<LiveMatch>>,
}

impl LivePublisher {
    /// Records and broadcasts one event. Events past [`MAX_LIVE_EVENTS`] are
    /// dropped (a match never has that many).
    pub fn publish(&self, event: LiveEvent) {
        let mut feed = lock(&self.feed);
        if feed.history.len() >= MAX_LIVE_EVENTS {
            return;
        }
        feed.history.push(event.clone());
        // No spectator is not an error.
        let _ = feed.sender.send(event);
    }

    /// Publishes one exchange.
    pub fn exchange(
        &self,
        round: u8,
        exchange: &ExchangeRecord,
        round_result: Option<RoundResultRecord>,
    ) {
        self.publish(LiveEvent::Exchange {
            round,
            exchange: Box::new(exchange.clone()),
            round_result,
            transcript: Vec::new(),
        });
    }

    /// Publishes the exchange the recorder has just committed (for
    /// [`crate::runner::run_match_observed`]).
    pub fn step(&self, recorder: &MatchRecorder, step: &ExchangeStep) {
        if let Some((round, exchange)) = recorder.last_exchange() {
            let round_result = step.round_result.map(|result| RoundResultRecord {
                winner: result.winner.into(),
                by: result.by.into(),
            });
            self.exchange(round, exchange, round_result);
        }
    }

    /// [`LivePublisher::step`] with what the exchange's model calls said,
    /// for a feed only the bot's author watches (`referee local --watch`).
    pub fn step_with_transcript(&self, recorder: &MatchRecorder, step: &ExchangeStep) {
        let Some((round, exchange)) = recorder.last_exchange() else {
            return;
        };
        let transcript = recorder
            .transcript()
            .map(|kept| {
                kept.decisions
                    .iter()
                    .rev()
                    .take_while(|decision| {
                        decision.round == round && decision.exchange == exchange.number
                    })
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        self.publish(LiveEvent::Exchange {
            round,
            exchange: Box::new(exchange.clone()),
            round_result: step.round_result.map(|result| RoundResultRecord {
                winner: result.winner.into(),
                by: result.by.into(),
            }),
            transcript: transcript.into_iter().rev().collect(),
        });
    }

    /// Publishes the end of the match and closes the feed.
    pub fn finish(self, result: &MatchResultRecord) {
        self.publish(LiveEvent::End {
            result: result.clone(),
        });
    }

    /// Publishes that the match stopped before its end and closes the feed.
    pub fn abort(self, reason: &str) {
        self.publish(LiveEvent::Aborted {
            reason: reason.to_owned(),
        });
    }

    /// Resolves once at least one spectator has subscribed to this feed (at
    /// once if one already has).
    pub async fn spectator_joined(&self) {
        let joined = {
            let feed = lock(&self.feed);
            if feed.sender.receiver_count() > 0 {
                return;
            }
            Arc::clone(&feed.joined)
        };
        joined.notified().await;
    }

    pub fn match_id(&self) -> &str {
        &self.match_id
    }
}

impl Drop for LivePublisher {
    fn drop(&mut self) {
        lock(&self.feeds.matches).remove(&self.match_id);
    }
}
