//! What keeping a transcript costs a match: 36 exchanges (12 a round, three
//! rounds, no knockout) whose two bots each call the model twice per
//! decision through their meter (the built-in house model, so that only the
//! referee's own work is timed), with the transcript kept (texts copied,
//! bounded, each decision's calls canonicalised and hashed) and without.
//!
//! cargo bench -p duel-referee --bench transcript

#![allow(clippy::unwrap_used, missing_debug_implementations)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use duel_referee::bot::{Decision, DecisionFuture};
use duel_referee::meter::{ChatMessage, ModelRequest};
use duel_referee::models::Catalogue;
use duel_referee::{
    Bot, BotContext, BotMaker, Fighter, FighterMeter, FighterSource, HostConfig, MatchHost,
    MatchOptions, ModelGateway, Spent,
};
use duel_replays::{FighterInfo, FighterKind};
use duel_rules::{Action, Observation, WeightClass};

/// The allocator of the `referee` and `ladder` binaries (src/main.rs).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Calls the model twice per decision with a prompt like a bot's, then
/// blocks: with both fighters blocking, every round goes the distance.
struct Thinker {
    meter: FighterMeter,
}

impl Bot for Thinker {
    fn info(&self) -> FighterInfo {
        FighterInfo {
            name: "thinker".into(),
            kind: FighterKind::Builtin,
            digest: "sha256:thinker".into(),
            spec: None,
        }
    }

    fn decide<'a>(&'a mut self, observation: Observation<'a>) -> DecisionFuture<'a> {
        let prompt = format!(
            "Round {}, exchange {}: you have {} HP and {} stamina, the opponent {} HP. \
             Answer with one of JAB HEAVY BLOCK DODGE FEINT RECOVER.",
            observation.round,
            observation.exchange,
            observation.you.hp,
            observation.you.stamina,
            observation.opponent.hp
        );
        Box::pin(async move {
            for _ in 0..2 {
                let messages = vec![
                    ChatMessage::new("system", "You are a careful fighter."),
                    ChatMessage::new("user", prompt.clone()),
                ];
                let _ = self
                    .meter
                    .complete_request(ModelRequest::new(messages, 16))
                    .await;
            }
            Decision::metered(Ok(Action::Block), self.meter.settle())
        })
    }

    fn abandoned(&mut self) -> Spent {
        self.meter.settle()
    }
}

fn host() -> MatchHost {
    let catalogue = Catalogue::single(duel_referee::models::HOUSE_URL, None).unwrap();
    let gateway =
        ModelGateway::from_catalogue(&catalogue, &|_| None, &duel_referee::tls::Trust::system())
            .unwrap();
    MatchHost::new(HostConfig::new(gateway))
}

fn thinker() -> Fighter {
    let make: BotMaker = std::sync::Arc::new(|context: &BotContext| {
        Box::new(Thinker {
            meter: context.meter.clone(),
        }) as Box<dyn Bot>
    });
    Fighter::new(FighterSource::Made(make))
}

fn transcripts(c: &mut Criterion) {
    let host = host();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("transcript");
    for (name, keep) in [
        (
            "36 exchanges, 2 calls a decision, without transcript",
            false,
        ),
        ("36 exchanges, 2 calls a decision, with transcript", true),
    ] {
        group.bench_function(name, |bench| {
            bench.iter(|| {
                runtime.block_on(async {
                    // The heavy class: 144 calls of ~60 tokens never run out.
                    let options = MatchOptions::new(WeightClass::Heavy)
                        .seed(1)
                        .transcript(keep);
                    let session = host.prepare([thinker(), thinker()], options).await.unwrap();
                    let played = session.play(&mut |_: &_, _: &_| {}).await;
                    assert_eq!(played.replay.exchanges().count(), 36);
                    black_box(played)
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, transcripts);
criterion_main!(benches);
