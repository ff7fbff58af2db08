//! WASM bots through the real binary: the example bots built by
//! `scripts/build-bots` (run by scripts/setup/bots.sh before the suite) play a
//! full match whose replay verifies, and a file that is not a component is a
//! one-line error before the match. And through a match host with an instance
//! pool (as `local`, `serve` and ladder workers build theirs): more matches at
//! once than the pool holds all play, the rest on demand.

use std::path::PathBuf;
use std::process::Command;

fn bot(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots (scripts/test.sh does)",
        path.display()
    );
    path.display().to_string()
}

#[test]
fn two_example_wasm_bots_play_a_match_that_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let replay = dir.path().join("m.json");
    let output = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args([
            "local",
            &bot("counter"),
            &bot("jabber"),
            "--seed",
            "3",
            "--replay",
        ])
        .arg(&replay)
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let parsed = duel_replays::Replay::read(&replay).expect("replay");
    assert_eq!(parsed.fighters[0].kind, duel_replays::FighterKind::Wasm);
    assert!(parsed.fighters[0].digest.starts_with("sha256:"));
    // Every decision is timed at microsecond resolution (a WASM decision takes
    // microseconds, which whole milliseconds would show as 0), and the summary
    // line says so.
    for (_, exchange) in parsed.exchanges() {
        for side in exchange.sides() {
            let micros = side.latency_us.expect("timed decisions carry latency_us");
            assert_eq!(micros / 1_000, side.latency_ms, "{side:?}");
        }
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .lines()
        .find(|line| line.contains("latency p50"))
        .expect("a summary line per fighter");
    let p50 = summary
        .split("p50 ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("p50 value");
    assert!(
        p50.ends_with(" µs") || p50.contains('.'),
        "p50 shown below whole milliseconds: {summary}"
    );
    let verified = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["replay", "verify"])
        .arg(&replay)
        .output()
        .expect("runs");
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
}

#[test]
fn a_file_that_is_not_a_component_is_refused_before_the_match() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fake = dir.path().join("fake.wasm");
    std::fs::write(&fake, b"not wasm").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["local", fake.to_str().expect("utf-8"), "builtin:block"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not a WebAssembly component"), "{stderr}");
    assert!(output.stdout.is_empty());
}

/// A tournament of WASM bots takes its instances from a pool sized by `--jobs`:
/// every match plays without a substitution, and the table does not depend on
/// how many matches ran at once.
#[test]
fn a_tournament_of_wasm_bots_plays_from_an_instance_pool() {
    let table = |jobs: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_referee"))
            .args([
                "tournament",
                &bot("counter"),
                &bot("jabber"),
                &bot("pacer"),
                "--rounds",
                "4",
                "--seed",
                "5",
                "--jobs",
                jobs,
                "--json",
            ])
            .output()
            .expect("runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        for bot in value["standings"]["bots"].as_array_mut().expect("bots") {
            assert_eq!(
                bot["substituted"],
                serde_json::json!([0.0, 0.0, 0.0]),
                "{bot}"
            );
            bot["latency_p50_ms"] = 0.into();
            bot["latency_p99_ms"] = 0.into();
            bot["latency_p50_us"] = 0.into();
            bot["latency_p99_us"] = 0.into();
        }
        value
    };
    let one = table("1");
    assert_eq!(one["standings"]["matches_played"], 24);
    assert_eq!(one, table("3"));
}

/// A built-in bot whose first decision waits for `gate`: its match stays in
/// its first exchange, its WASM opponent's instance live, until the gate opens.
struct Gated {
    inner: duel_referee::builtin::BuiltinBot,
    gate: Option<std::sync::Arc<tokio::sync::Barrier>>,
}

impl duel_referee::Bot for Gated {
    fn info(&self) -> duel_replays::FighterInfo {
        self.inner.info()
    }

    fn decide<'a>(
        &'a mut self,
        observation: duel_rules::Observation<'a>,
    ) -> duel_referee::bot::DecisionFuture<'a> {
        Box::pin(async move {
            if let Some(gate) = self.gate.take() {
                gate.wait().await;
            }
            self.inner.decide(observation).await
        })
    }

    fn abandoned(&mut self) -> duel_referee::Spent {
        duel_referee::Spent::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_matches_at_once_than_the_pool_holds_all_play() {
    use duel_referee::{
        BotContext, BotMaker, BuiltinSpec, Fighter, FighterSource, HostConfig, MatchHost,
        MatchOptions, ModelGateway,
    };
    use duel_rules::WeightClass;
    use std::sync::Arc;
    use std::time::Duration;

    const MATCHES: usize = 6;
    let clock = Duration::from_secs(10);
    // A pool for one match has four slots; six WASM instances will be live.
    let host = MatchHost::new(HostConfig::new(ModelGateway::disabled()).playing_at_once(1));
    let bytes = std::fs::read(bot("jabber")).expect("example bot built");
    let jabber = host.load_component(bytes, clock).await.expect("loads");
    // Every match is in its first exchange (its WASM instance made) before
    // any goes on.
    let gate = Arc::new(tokio::sync::Barrier::new(MATCHES));
    let mut matches = tokio::task::JoinSet::new();
    for seed in 0..MATCHES as u64 {
        let gate = Arc::clone(&gate);
        let make: BotMaker = Arc::new(move |context: &BotContext| {
            Box::new(Gated {
                inner: duel_referee::builtin::BuiltinBot::new(
                    BuiltinSpec::Random,
                    context.seed,
                    context.side,
                ),
                gate: Some(Arc::clone(&gate)),
            }) as Box<dyn duel_referee::Bot>
        });
        let fighters = [
            Fighter::new(FighterSource::Component(jabber.clone())),
            Fighter::new(FighterSource::Made(make)),
        ];
        let options = MatchOptions::new(WeightClass::Middle).seed(seed);
        let session = host.prepare(fighters, options).await.expect("prepared");
        matches.spawn(async move { session.play(&mut |_: &_, _: &_| {}).await.replay });
    }
    let mut replays = Vec::new();
    while let Some(replay) = matches.join_next().await {
        replays.push(replay.expect("match task"));
    }
    assert_eq!(replays.len(), MATCHES);
    for replay in &replays {
        for (_, exchange) in replay.exchanges() {
            assert_eq!(
                exchange.a.source,
                duel_replays::SourceName::Bot,
                "{exchange:?}"
            );
        }
    }
    let stats = host.wasm_stats();
    assert_eq!(
        (stats.pool_instantiations, stats.on_demand_instantiations),
        (4, 2),
        "{stats:?}"
    );
}

/// A bot's file is read once for many matches, not once a match (each read
/// started a thread: a 1,200-match tournament made 2,419), and read again
/// once the file changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bots_file_is_read_once_until_it_changes() {
    use duel_referee::{BotSpec, Fighter, HostConfig, MatchHost, MatchOptions, ModelGateway};
    use duel_rules::WeightClass;

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("jabber.wasm");
    std::fs::copy(bot("jabber"), &path).expect("copied");
    let host = MatchHost::new(HostConfig::new(ModelGateway::disabled()));
    let loads = |host: &MatchHost| {
        let stats = host.wasm_stats();
        stats.compiled + stats.memory_hits + stats.disk_hits
    };
    for seed in 0..5 {
        let fighters = [
            Fighter::new(duel_referee::FighterSource::Spec(BotSpec::Wasm(
                path.clone(),
            ))),
            Fighter::new(duel_referee::FighterSource::Spec(
                BotSpec::parse("builtin:random").expect("spec"),
            )),
        ];
        let session = host
            .prepare(fighters, MatchOptions::new(WeightClass::Middle).seed(seed))
            .await
            .expect("prepared");
        session.play(&mut |_: &_, _: &_| {}).await;
    }
    assert_eq!(loads(&host), 1, "read and loaded once for five matches");
    // Changed on disk (the same bytes written again: a new modification
    // time), the file is read again.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, std::fs::read(bot("jabber")).expect("bytes")).expect("rewritten");
    let fighter = Fighter::new(duel_referee::FighterSource::Spec(BotSpec::Wasm(
        path.clone(),
    )));
    host.check(&fighter, MatchOptions::new(WeightClass::Middle))
        .await
        .expect("checked");
    assert_eq!(loads(&host), 2, "read again after it changed");
}
