//! The replay viewer in real headless Chromium, driven over the DevTools
//! protocol: load a replay from the service (it opens on its last exchange,
//! the whole chart drawn), step from the opening bell to the end with real
//! mouse clicks, check the final HP shown against the replay, save
//! screenshots (desktop and phone width) under the target folder; follow a
//! match of the real `referee local --watch` live to its end and reopen it;
//! and follow a ladder match live, with its links back to the site.

use crate::support;
use crate::watch_support;

use std::path::PathBuf;
use std::process::Command;

use duel_referee::publish::RateConfig;
use duel_replays::store::ReplayStore;
use duel_rules::WeightClass;
use serde_json::{Value, json};
use support::chromium::{Chromium, screenshot_folder};

#[test]
fn the_viewer_plays_a_replay_to_its_final_hp() {
    let key = support::referee_key();
    let replay = support::signed(
        support::play(
            "view-1",
            "2026-05-01T20:00:00Z",
            WeightClass::Middle,
            21,
            "builtin:counter",
            "builtin:random",
        ),
        &key,
    );
    let (_store_dir, server) = serve_replay(&replay, &key);
    let exchanges: Vec<_> = replay.exchanges().collect();
    let (_, last) = *exchanges.last().expect("a match has exchanges");

    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    chromium.open(&server.url("/replays/view-1/view"));
    assert_eq!(
        chromium.eval("document.body.dataset.frames"),
        json!(exchanges.len().to_string())
    );
    // A settled replay opens on its last exchange, the whole chart drawn.
    assert_shows_the_end(&mut chromium, &replay);
    assert_eq!(
        chromium.eval("document.getElementById('raw-link').getAttribute('href')"),
        json!("/replays/view-1")
    );
    assert_eq!(
        chromium.eval("document.getElementById('ladder-links').hidden"),
        json!(true),
        "not a ladder match: no ladder links"
    );

    // From the opening bell, step by step to the end.
    chromium.click("#btn-start");
    chromium.wait_for("document.body.dataset.frame", &json!("0"));
    assert_eq!(
        chromium.eval("document.getElementById('hp-a-value').textContent"),
        json!("160")
    );
    assert_eq!(count(&mut chromium, "#chart circle"), 0);
    for step in 1..=exchanges.len() {
        chromium.click("#btn-forward");
        chromium.wait_for("document.body.dataset.frame", &json!(step.to_string()));
    }
    assert_eq!(
        chromium.eval("document.getElementById('hp-a-value').textContent"),
        json!(last.a.hp.to_string())
    );
    assert_eq!(
        chromium.eval("document.getElementById('hp-b-value').textContent"),
        json!(last.b.hp.to_string())
    );
    assert_eq!(
        chromium.eval("document.getElementById('stamina-b-value').textContent"),
        json!(last.b.stamina.to_string())
    );
    assert_eq!(
        chromium.eval("document.getElementById('match-result').hidden"),
        json!(false)
    );
    let result_text = chromium.eval("document.getElementById('match-result').textContent");
    let winner = match replay.result.winner {
        duel_replays::WinnerName::A => format!("{} wins", replay.fighters[0].name),
        duel_replays::WinnerName::B => format!("{} wins", replay.fighters[1].name),
        duel_replays::WinnerName::Draw => "draw".to_owned(),
    };
    assert!(
        result_text.as_str().expect("text").contains(&winner),
        "{result_text}"
    );
    assert_eq!(
        chromium.eval("document.getElementById('btn-forward').disabled"),
        json!(true)
    );
    let folder = screenshot_folder("viewer-screenshots");
    chromium.screenshot(&folder.join("viewer-desktop.png"));

    // Scrub back to the opening bell, then at phone width nothing overflows.
    chromium.eval(
        "(() => { const s = document.getElementById('scrub'); s.value = '0'; \
         s.dispatchEvent(new Event('input')); })()",
    );
    assert_eq!(
        chromium.eval("document.getElementById('hp-b-value').textContent"),
        json!("160")
    );
    chromium.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
    );
    chromium.click("#btn-end");
    chromium.wait_for(
        "document.body.dataset.frame",
        &json!(exchanges.len().to_string()),
    );
    assert_eq!(
        chromium.eval("document.documentElement.scrollWidth <= 390"),
        json!(true),
        "the viewer fits a phone-sized screen"
    );
    chromium.screenshot(&folder.join("viewer-phone.png"));
}

#[test]
fn the_viewer_follows_a_watched_match_live_to_its_final_hp() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("watched.json");
    let file_arg = file.display().to_string();
    let mut watched = watch_support::Watched::start(&[
        "local",
        "builtin:counter",
        "builtin:random",
        "--seed",
        "21",
        "--replay",
        &file_arg,
    ]);
    let url = watched.view_url();

    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    chromium.call("Page.navigate", json!({ "url": url }));
    // The match starts when this page subscribes to its feed; the page then
    // follows it live and finally shows the signed replay.
    chromium.wait_for(
        "document.body && document.body.dataset.state",
        &json!("ready"),
    );
    watched.line_containing("ctrl-c to stop");
    let replay = duel_replays::Replay::read(&file).expect("the --replay file");
    let exchanges: Vec<_> = replay.exchanges().collect();
    let (_, last) = *exchanges.last().expect("a match has exchanges");
    assert_eq!(
        chromium.eval("document.body.dataset.liveEvents"),
        json!((exchanges.len() + 2).to_string()),
        "the page received start, every exchange and the end over the live feed"
    );
    assert_eq!(
        chromium.eval("document.body.dataset.frames"),
        json!(exchanges.len().to_string())
    );
    assert_eq!(
        chromium.eval("document.body.dataset.frame"),
        json!(exchanges.len().to_string()),
        "following the match, the page is on its last exchange"
    );
    for (id, value) in [
        ("hp-a-value", last.a.hp),
        ("hp-b-value", last.b.hp),
        ("stamina-a-value", last.a.stamina),
    ] {
        assert_eq!(
            chromium.eval(&format!("document.getElementById('{id}').textContent")),
            json!(value.to_string()),
            "{id}"
        );
    }
    // "signed" only once the browser has checked the signature against the
    // session's published key.
    chromium.wait_for("document.body.dataset.signature", &json!("verified"));
    assert_eq!(
        chromium.eval("document.getElementById('signed').textContent"),
        json!("signed")
    );
    assert_eq!(
        chromium.eval("document.getElementById('match-result').hidden"),
        json!(false)
    );
    chromium.screenshot(&screenshot_folder("viewer-screenshots").join("viewer-watch.png"));

    // Opened after the match, the same URL finds no live feed and shows the
    // finished match on its last exchange, the whole chart drawn.
    chromium.open(&url);
    assert_eq!(
        chromium.eval("document.body.dataset.liveEvents === undefined"),
        json!(true),
        "no live event this time"
    );
    assert_eq!(
        chromium.eval("document.body.dataset.frames"),
        json!(exchanges.len().to_string())
    );
    assert_shows_the_end(&mut chromium, &replay);
    // No ladder here: the site's match page is not found, and the page links
    // to the replay only.
    chromium.wait_for("document.body.dataset.siteMatch", &json!("none"));
    assert_eq!(
        chromium.eval(
            "[document.getElementById('ladder-links').hidden, \
              document.getElementById('raw-link').getAttribute('href')]"
        ),
        json!([true, format!("/replays/{}", replay.match_id)])
    );
    chromium.wait_for("document.body.dataset.signature", &json!("verified"));
    assert_eq!(
        chromium.eval("document.getElementById('signed').textContent"),
        json!("signed")
    );
    drop(chromium);
    assert!(watched.interrupt().success());
}

/// A ranked match of a ladder followed at `/live/{id}/view`, as a match
/// page's "Watch live" and Duel TV's "open in viewer" open it, on a service
/// with a stand-in for the ladder's site beside it. The live feed names no
/// season, so the page asks the site (`/api/matches/{id}`) and links back to
/// it, the match page and both bots while the match is live; a `#r1e4` not
/// played yet is shown when it arrives; reopened once the match is over, the
/// same URL shows it on its last exchange, the whole chart drawn, links back
/// included.
#[test]
fn the_live_viewer_of_a_ladder_match_links_back_and_reopens_on_its_end() {
    use axum::extract::Path;
    use axum::response::{Html, IntoResponse};
    use axum::routing::get;
    use duel_referee::publish::{HttpLimits, LiveEvent};

    let key = support::referee_key();
    let mut replay = (1..200)
        .map(|seed| {
            support::play(
                "ranked-1",
                "2026-05-01T20:00:00Z",
                WeightClass::Middle,
                seed,
                "builtin:random",
                "builtin:counter",
            )
        })
        .find(|replay| replay.rounds[0].exchanges.len() >= 5)
        .expect("some seed below 200 has 5 exchanges in its first round");
    replay.season = Some("winter".to_owned());
    let replay = support::signed(replay, &key);
    let bots = [
        replay.fighters[0].name.to_string(),
        replay.fighters[1].name.to_string(),
    ];

    // The ladder's site as the viewer sees it: a home page, the match page and
    // its JSON twin (the fields the ladder's `/api/matches/{id}` has).
    let twin = json!({
        "id": "ranked-1", "season": "winter", "class": "middle", "state": "running",
        "bot_a": bots[0], "bot_b": bots[1], "winner": null,
    });
    let site = axum::Router::new()
        .route(
            "/",
            get(|| async { Html("<!doctype html><title>ladder</title><h1>The ladder</h1>") }),
        )
        .route(
            "/matches/{id}",
            get(|| async { Html("<!doctype html><title>match</title><h1>The match</h1>") }),
        )
        .route(
            "/api/matches/{id}",
            get(move |Path(id): Path<String>| {
                let twin = twin.clone();
                async move {
                    if id == "ranked-1" {
                        axum::Json(twin).into_response()
                    } else {
                        axum::http::StatusCode::NOT_FOUND.into_response()
                    }
                }
            }),
        );
    let folder = tempfile::tempdir().expect("temp dir");
    let store = ReplayStore::open(&folder.path().display().to_string()).expect("open");
    let server = support::Server::start_beside(
        store.clone(),
        &key,
        RateConfig::default(),
        HttpLimits::default(),
        site,
    );

    let publisher = server
        .live
        .start("ranked-1", LiveEvent::start_of(&replay))
        .expect("the feed opens");
    let steps: Vec<_> = replay
        .rounds
        .iter()
        .flat_map(|round| {
            round
                .exchanges
                .iter()
                .enumerate()
                .map(move |(i, exchange)| {
                    let ends = i + 1 == round.exchanges.len();
                    (round.number, exchange, ends.then_some(round.result))
                })
        })
        .collect();
    let publish = |from: usize, to: usize| {
        for (round, exchange, result) in &steps[from..to] {
            publisher.exchange(*round, exchange, *result);
        }
    };
    publish(0, 2);

    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    chromium.navigate(&server.url("/live/ranked-1/view#r1e4"));
    chromium.wait_for("document.body.dataset.state", &json!("live"));
    chromium.wait_for("document.body.dataset.liveEvents", &json!("3"));
    assert_eq!(
        chromium.eval("document.body.dataset.frame"),
        json!("2"),
        "live, on the newest exchange"
    );
    chromium.wait_for("document.body.dataset.siteMatch", &json!("found"));
    let links = "[document.getElementById('ladder-links').hidden, \
         document.getElementById('link-site').getAttribute('href'), \
         document.getElementById('link-match').getAttribute('href'), \
         ['a', 'b'].map((side) => document.getElementById('link-bot-' + side).textContent), \
         ['a', 'b'].map((side) => document.getElementById('link-bot-' + side).getAttribute('href'))]";
    let bot_hrefs: Vec<String> = bots
        .iter()
        .map(|name| {
            let encoded = chromium.eval(&format!("encodeURIComponent({})", json!(name)));
            format!("/bots/{}", encoded.as_str().expect("text"))
        })
        .collect();
    let expected_links = json!([false, "/", "/matches/ranked-1", bots, bot_hrefs]);
    assert_eq!(
        chromium.eval(links),
        expected_links,
        "the live page links back"
    );
    assert_eq!(
        chromium.eval("document.body.dataset.signature"),
        json!("live")
    );

    // `#r1e4` is shown when it is played, and the page stays there.
    publish(2, 5);
    chromium.wait_for("document.body.dataset.liveEvents", &json!("6"));
    chromium.wait_for("document.body.dataset.target", &json!("r1e4"));
    assert_eq!(chromium.eval("document.body.dataset.frame"), json!("4"));
    assert_eq!(
        chromium.eval(
            "Array.from(document.querySelectorAll('tr.exchange.target')).map((row) => row.id)"
        ),
        json!(["r1e4"])
    );

    // The end: the replay is published, then the feed closes; the page takes
    // the signed replay and keeps its links.
    publish(5, steps.len());
    support::runtime()
        .block_on(store.put(&replay))
        .expect("put");
    publisher.finish(&replay.result);
    chromium.wait_for("document.body.dataset.state", &json!("ready"));
    chromium.wait_for("document.body.dataset.signature", &json!("verified"));
    assert_eq!(chromium.eval("document.body.dataset.frame"), json!("4"));
    assert_eq!(chromium.eval(links), expected_links);

    // Reopened once the match is over: no feed any more, the finished match
    // on its last exchange, the whole chart drawn, and the way back.
    chromium.open(&server.url("/live/ranked-1/view"));
    assert_eq!(
        chromium.eval("document.body.dataset.liveEvents === undefined"),
        json!(true),
        "no live event this time"
    );
    assert_shows_the_end(&mut chromium, &replay);
    assert_eq!(chromium.eval(links), expected_links);
    chromium.screenshot(&screenshot_folder("viewer-screenshots").join("viewer-live-reopened.png"));
    chromium.click("#link-match");
    chromium.wait_for("location.pathname", &json!("/matches/ranked-1"));
    chromium.wait_for("document.title", &json!("match"));
}

/// The example bot `chatter` (built by `scripts/build-bots`), which logs on
/// every decision, overflows its log bounds on its 2nd and panics on its 3rd.
fn chatter_bot() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bots/chatter.wasm");
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots (scripts/test.sh does)",
        path.display()
    );
    path.display().to_string()
}

/// Runs the real `referee` binary; its stdout, or a panic with both streams.
fn referee(args: &[&str], data_home: &std::path::Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .env("XDG_DATA_HOME", data_home)
        .output()
        .expect("referee runs");
    assert!(
        output.status.success(),
        "referee {args:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 tape")
}

const ACTION_NAMES: [&str; 6] = ["JAB", "HEAVY", "BLOCK", "DODGE", "FEINT", "RECOVER"];

/// The damage each fighter dealt per exchange as the tape prints it (`→ N` in
/// that fighter's action cell, nothing when it dealt none): `(id, [A, B])`
/// with ids `r{round}e{exchange}` in tape order.
fn tape_damage(tape: &str) -> Vec<(String, [u32; 2])> {
    let mut round = 0;
    let mut found = Vec::new();
    for line in tape.lines() {
        if let Some(number) = line.strip_prefix("Round ") {
            round = number.trim().parse().expect("round heading");
            continue;
        }
        let trimmed = line.trim_start();
        let Some((number, rest)) = trimmed.split_once("  ") else {
            continue;
        };
        let Ok(exchange) = number.parse::<u32>() else {
            continue;
        };
        let mut dealt = [0, 0];
        for (at, _) in rest.match_indices("→ ") {
            let after = &rest[at + "→ ".len()..];
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            let damage: u32 = digits.parse().expect("damage after →");
            // A's cell is followed by B's action; B's by the HP bars.
            let next = after[digits.len()..].trim_start();
            let side = if ACTION_NAMES.iter().any(|name| next.starts_with(name)) {
                0
            } else {
                1
            };
            assert_eq!(dealt[side], 0, "one damage per side: {line}");
            dealt[side] = damage;
        }
        found.push((format!("r{round}e{exchange}"), dealt));
    }
    found
}

/// The damage per row of the viewer's exchange table, read as the page shows it.
fn viewer_damage(chromium: &mut Chromium) -> Vec<(String, [u32; 2])> {
    let rows = chromium.eval(
        "Array.from(document.querySelectorAll('#exchange-rows tr.exchange')).map((row) => \
         [row.id, Array.from(row.querySelectorAll('td.dealt')).map((cell) => cell.textContent)])",
    );
    rows.as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            let cells = row[1].as_array().expect("cells");
            let parse = |cell: &Value| -> u32 {
                let text = cell.as_str().expect("text");
                match text.strip_prefix("→ ") {
                    Some(number) => number.parse().expect("a number after →"),
                    None => {
                        assert_eq!(text, "", "a cell without damage is empty, as on the tape");
                        0
                    }
                }
            };
            (
                row[0].as_str().expect("id").to_owned(),
                [parse(&cells[0]), parse(&cells[1])],
            )
        })
        .collect()
}

/// The frame (1-based exchange index over the match) of round `round`,
/// exchange `exchange`.
fn frame_of(replay: &duel_replays::Replay, round: u8, exchange: u8) -> usize {
    1 + replay
        .exchanges()
        .position(|(r, e)| r == round && e.number == exchange)
        .expect("such an exchange")
}

fn page_text(chromium: &mut Chromium) -> String {
    chromium
        .eval("document.body.textContent")
        .as_str()
        .expect("text")
        .to_owned()
}

/// Steps with the ▶ button until the page shows `frame`.
fn step_to(chromium: &mut Chromium, frame: usize) {
    loop {
        let now: usize = chromium
            .eval("document.body.dataset.frame")
            .as_str()
            .expect("frame")
            .parse()
            .expect("a number");
        if now >= frame {
            assert_eq!(now, frame, "stepped past frame {frame}");
            return;
        }
        chromium.click("#btn-forward");
        chromium.wait_for("document.body.dataset.frame", &json!((now + 1).to_string()));
    }
}

/// Serves `replay` over HTTP from a fresh folder store (kept while the folder
/// handle lives).
fn serve_replay(
    replay: &duel_replays::Replay,
    key: &duel_replays::SigningKey,
) -> (tempfile::TempDir, support::Server) {
    let folder = tempfile::tempdir().expect("temp dir");
    let store = ReplayStore::open(&folder.path().display().to_string()).expect("open");
    support::runtime().block_on(store.put(replay)).expect("put");
    let server = support::Server::start(store, key, RateConfig::default());
    (folder, server)
}

fn count(chromium: &mut Chromium, selector: &str) -> usize {
    let value = chromium.eval(&format!("document.querySelectorAll('{selector}').length"));
    usize::try_from(value.as_u64().expect("a count")).expect("fits")
}

/// The page shows `replay`'s last exchange: HP and stamina after it, every
/// exchange's row, the whole chart (one point per exchange per series, the
/// last point at the final value) and the match's result.
fn assert_shows_the_end(chromium: &mut Chromium, replay: &duel_replays::Replay) {
    let exchanges = replay.exchanges().count();
    let (_, last) = replay.exchanges().last().expect("a match has exchanges");
    chromium.wait_for("document.body.dataset.frame", &json!(exchanges.to_string()));
    for (id, value) in [
        ("hp-a-value", last.a.hp),
        ("hp-b-value", last.b.hp),
        ("stamina-a-value", last.a.stamina),
        ("stamina-b-value", last.b.stamina),
    ] {
        assert_eq!(
            chromium.eval(&format!("document.getElementById('{id}').textContent")),
            json!(value.to_string()),
            "{id}"
        );
    }
    assert_eq!(
        count(chromium, "#exchange-rows tr.exchange"),
        exchanges,
        "every exchange's row"
    );
    let last_id = format!("r{}e{}", replay.rounds.len(), last.number);
    assert_eq!(
        chromium.eval("document.querySelector('#exchange-rows tr.exchange.current').id"),
        json!(last_id)
    );
    for (series, value) in [
        ("hp-a", last.a.hp),
        ("hp-b", last.b.hp),
        ("st-a", last.a.stamina),
        ("st-b", last.b.stamina),
    ] {
        assert_eq!(
            count(chromium, &format!("#chart circle.point.{series}")),
            exchanges,
            "{series}: a point per exchange"
        );
        assert_eq!(
            chromium.eval(&format!(
                "Array.from(document.querySelectorAll('#chart circle.point.{series}')).pop().dataset.value"
            )),
            json!(value.to_string()),
            "{series}"
        );
    }
    assert_eq!(
        count(chromium, "#chart line.round-boundary"),
        replay.rounds.len() - 1
    );
    assert_eq!(
        chromium.eval("document.getElementById('match-result').hidden"),
        json!(false)
    );
}

#[test]
fn the_exchange_table_shows_causes_logs_and_the_tapes_damage() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("chatter.json");
    let file_arg = file.display().to_string();
    referee(
        &[
            "local",
            &chatter_bot(),
            "builtin:random",
            "--seed",
            "4",
            "--replay",
            &file_arg,
        ],
        dir.path(),
    );
    let mut replay = duel_replays::Replay::read(&file).expect("the --replay file");
    // A log line that would be markup if the page inserted it as HTML.
    const HOSTILE: &str = "<b id=\"injected\">bold</b> & <img src=x onerror=\"window.pwned=1\">";
    let side = &mut replay.rounds[0].exchanges[0].a;
    let mut log = side.take_log();
    log.push(HOSTILE.to_owned());
    side.set_log(log);
    replay.match_id = "logs-1".to_owned();
    let key = support::referee_key();
    let replay = support::signed(replay, &key);
    replay.write(&file).expect("rewrite the replay");
    let tape = referee(
        &["replay", "show", "--color", "never", &file_arg],
        dir.path(),
    );

    let (fault_round, faulted) = replay
        .exchanges()
        .find(|(_, exchange)| exchange.a.source == duel_replays::SourceName::Fault)
        .expect("chatter panics on its 3rd decision");
    let reason = faulted
        .a
        .reason()
        .map(str::to_owned)
        .expect("a fault has a reason");
    let fault_id = format!("r{fault_round}e{}", faulted.number);
    let (truncated_round, truncated) = replay
        .exchanges()
        .find(|(_, exchange)| exchange.a.log_truncated)
        .expect("chatter overflows its log on its 2nd decision");
    let truncated_id = format!("r{truncated_round}e{}", truncated.number);

    let (_store_dir, server) = serve_replay(&replay, &key);

    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    chromium.open(&server.url(&format!("/replays/logs-1/view#{fault_id}")));
    let fault_frame = frame_of(&replay, fault_round, faulted.number);
    assert_eq!(
        chromium.eval("document.body.dataset.frame"),
        json!(fault_frame.to_string()),
        "the link opens on its exchange"
    );
    // The cause in full, in the row under the exchange, not only in a tooltip.
    let notes = chromium.eval(&format!(
        "Array.from(document.getElementById('{fault_id}').nextElementSibling\
         .querySelectorAll('.note')).map((note) => note.textContent)"
    ));
    let cause = format!(
        "A │ substituted (fault): {}",
        reason.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    assert!(
        notes
            .as_array()
            .expect("notes")
            .iter()
            .any(|note| note == &json!(cause)),
        "{cause:?} in {notes}"
    );
    for line in faulted.a.log() {
        let shown = format!("A │ {}", line.trim_end());
        assert!(
            notes
                .as_array()
                .expect("notes")
                .iter()
                .any(|note| note.as_str() == Some(shown.as_str())),
            "{shown:?} in {notes}"
        );
    }
    let truncation = chromium.eval(&format!(
        "document.getElementById('{truncated_id}').nextElementSibling.textContent"
    ));
    assert!(
        truncation
            .as_str()
            .expect("text")
            .contains("… log truncated"),
        "{truncation}"
    );
    // Log lines are text, never markup.
    assert!(page_text(&mut chromium).contains(HOSTILE));
    assert_eq!(count(&mut chromium, "#injected, #exchange-rows img"), 0);
    assert_eq!(chromium.eval("window.pwned === undefined"), json!(true));
    assert_eq!(
        chromium.eval("document.body.dataset.signature"),
        json!("verified")
    );
    assert_eq!(
        chromium.eval("document.getElementById('signed').textContent"),
        json!("signed")
    );

    // Every row's damage is the tape's.
    chromium.click("#btn-end");
    let exchanges = replay.exchanges().count();
    chromium.wait_for("document.body.dataset.frame", &json!(exchanges.to_string()));
    let from_tape = tape_damage(&tape);
    assert_eq!(from_tape.len(), exchanges, "{tape}");
    assert!(
        from_tape.iter().any(|(_, dealt)| dealt[0] > 0)
            && from_tape.iter().any(|(_, dealt)| dealt[1] > 0),
        "both fighters dealt damage somewhere: {tape}"
    );
    assert_eq!(viewer_damage(&mut chromium), from_tape);

    // The signature is checked, not assumed: a changed replay or another key fails.
    for (change, expected) in [
        ("replay.rounds[0].exchanges[0].a.hp += 1", "invalid"),
        (
            "replay.signature.key = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)))",
            "invalid",
        ),
        ("", "verified"),
    ] {
        let verdict = chromium.eval(&format!(
            "fetch('/replays/logs-1').then((r) => r.json()).then((replay) => {{ {change}; \
             return DuelViewer.checkSignature(replay, '/replays/logs-1'); }}).then((v) => v.state)"
        ));
        assert_eq!(verdict, json!(expected), "{change}");
    }
}

/// A real match of built-in bots that goes to a third round with at least 7
/// exchanges in the second: the first such seed.
fn three_round_match() -> duel_replays::Replay {
    (1..500)
        .map(|seed| {
            support::play(
                "three-1",
                "2026-05-01T20:00:00Z",
                WeightClass::Middle,
                seed,
                "builtin:random",
                "builtin:counter",
            )
        })
        .find(|replay| replay.rounds.len() == 3 && replay.rounds[1].exchanges.len() >= 7)
        .expect("some seed below 500 plays three rounds")
}

#[test]
fn the_viewer_links_rows_draws_the_chart_and_never_spoils() {
    let key = support::referee_key();
    let replay = support::signed(three_round_match(), &key);
    let (_store_dir, server) = serve_replay(&replay, &key);
    let exchanges = replay.exchanges().count();
    let round_text = |number: u8| {
        let result = replay.rounds[usize::from(number) - 1].result;
        let winner = match result.winner {
            duel_replays::WinnerName::A => format!("{} wins", replay.fighters[0].name),
            duel_replays::WinnerName::B => format!("{} wins", replay.fighters[1].name),
            duel_replays::WinnerName::Draw => "drawn".to_owned(),
        };
        format!("Round {number}: {winner}")
    };

    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    // It opens on the last exchange: the whole match is on the page.
    chromium.open(&server.url("/replays/three-1/view"));
    assert_shows_the_end(&mut chromium, &replay);
    let text = page_text(&mut chromium);
    for number in 1..=3 {
        assert!(text.contains(&round_text(number)), "{text}");
    }

    // Every row links to itself: a real click on round 2, exchange 3's link
    // selects that exchange and puts its anchor in the address.
    chromium.click("#r2e3 th.num a");
    let r2e3 = frame_of(&replay, 2, 3);
    chromium.wait_for("document.body.dataset.frame", &json!(r2e3.to_string()));
    assert_eq!(chromium.eval("location.hash"), json!("#r2e3"));
    assert_eq!(
        chromium.eval(
            "Array.from(document.querySelectorAll('tr.exchange.target')).map((row) => row.id)"
        ),
        json!(["r2e3"])
    );
    assert_eq!(
        chromium.eval(
            "Array.from(document.querySelectorAll('#exchange-rows tr.exchange')).every((row) => \
             row.querySelector('th.num a').getAttribute('href') === '#' + row.id)"
        ),
        json!(true)
    );

    // `#start`: at the opening bell nothing of the match is in the page.
    chromium.open(&server.url("/replays/three-1/view#start"));
    assert_eq!(chromium.eval("document.body.dataset.frame"), json!("0"));
    let text = page_text(&mut chromium);
    assert!(
        text.contains("Opening bell"),
        "the opening bell is shown: {text}"
    );
    for number in 1..=3 {
        assert!(!text.contains(&round_text(number)), "{text}");
    }
    assert!(!text.contains("Round 3"), "{text}");
    assert_eq!(count(&mut chromium, "#exchange-rows tr"), 0);
    assert_eq!(count(&mut chromium, "#chart circle"), 0);

    // `#r2e7` opens on that exchange, scrolled to and highlighted.
    chromium.open(&server.url("/replays/three-1/view#r2e7"));
    let target = frame_of(&replay, 2, 7);
    assert_eq!(
        chromium.eval("document.body.dataset.frame"),
        json!(target.to_string())
    );
    assert_eq!(
        chromium.eval(
            "Array.from(document.querySelectorAll('tr.exchange.target')).map((row) => row.id)"
        ),
        json!(["r2e7"])
    );
    assert_eq!(
        chromium.eval(
            "(() => { const r = document.getElementById('r2e7').getBoundingClientRect(); \
             return r.top >= 0 && r.bottom <= window.innerHeight; })()"
        ),
        json!(true),
        "the linked row is on screen"
    );
    assert_eq!(
        count(&mut chromium, "#exchange-rows tr.exchange"),
        target,
        "rows up to the exchange shown, none after"
    );
    for series in ["hp-a", "hp-b", "st-a", "st-b"] {
        assert_eq!(
            count(&mut chromium, &format!("#chart circle.point.{series}")),
            target,
            "{series}"
        );
    }
    assert_eq!(count(&mut chromium, "#chart line.round-boundary"), 1);
    let text = page_text(&mut chromium);
    assert!(text.contains(&round_text(1)), "round 1 is over: {text}");
    assert!(!text.contains(&round_text(2)), "{text}");
    assert!(!text.contains("Round 3"), "{text}");

    // Stepping on: round 2's result at its last exchange, still nothing of round 3.
    let round_2_last = replay.rounds[1].exchanges.last().expect("exchanges").number;
    let round_2_end = frame_of(&replay, 2, round_2_last);
    step_to(&mut chromium, round_2_end);
    let text = page_text(&mut chromium);
    assert!(text.contains(&round_text(2)), "{text}");
    assert!(!text.contains("Round 3"), "{text}");
    step_to(&mut chromium, round_2_end + 1);
    let text = page_text(&mut chromium);
    assert!(text.contains("Round 3"), "round 3 has begun: {text}");
    assert!(!text.contains(&round_text(3)), "{text}");

    // At the end: every exchange, one point per exchange per series, both
    // round boundaries, every round's result and the HP of the last exchange.
    chromium.click("#btn-end");
    chromium.wait_for("document.body.dataset.frame", &json!(exchanges.to_string()));
    assert_eq!(
        count(&mut chromium, "#exchange-rows tr.exchange"),
        exchanges
    );
    let (_, last) = replay.exchanges().last().expect("exchanges");
    for (series, value) in [
        ("hp-a", last.a.hp),
        ("hp-b", last.b.hp),
        ("st-a", last.a.stamina),
        ("st-b", last.b.stamina),
    ] {
        assert_eq!(
            count(&mut chromium, &format!("#chart circle.point.{series}")),
            exchanges,
            "{series}"
        );
        assert_eq!(
            chromium.eval(&format!(
                "Array.from(document.querySelectorAll('#chart circle.point.{series}')).pop().dataset.value"
            )),
            json!(value.to_string()),
            "{series}"
        );
    }
    assert_eq!(count(&mut chromium, "#chart line.round-boundary"), 2);
    let text = page_text(&mut chromium);
    for number in 1..=3 {
        assert!(text.contains(&round_text(number)), "{text}");
    }

    let folder = screenshot_folder("viewer-screenshots");
    chromium.navigate(&server.url("/replays/three-1/view#r2e7"));
    chromium.wait_for(
        "document.body !== null && document.body.dataset.signature",
        &json!("verified"),
    );
    chromium.screenshot(&folder.join("viewer-table-desktop.png"));
    chromium.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
    );
    chromium.navigate(&server.url("/replays/three-1/view#r2e7"));
    chromium.wait_for(
        "document.body !== null && document.body.dataset.signature",
        &json!("verified"),
    );
    assert_eq!(
        chromium.eval("document.documentElement.scrollWidth <= 390"),
        json!(true),
        "the page fits a phone; the table scrolls inside its own box"
    );
    chromium.screenshot(&folder.join("viewer-table-phone.png"));
    eprintln!("viewer screenshots in {}", folder.display());

    // `?src=` loads only from this origin.
    for src in [
        "http://127.0.0.2:9/replays/three-1",
        "//example.invalid/x.json",
    ] {
        chromium.navigate(&server.url(&format!("/replays/three-1/view?src={src}")));
        chromium.wait_for(
            "document.body !== null && document.body.dataset.state",
            &json!("error"),
        );
        let status = chromium.eval("document.getElementById('status').textContent");
        assert!(
            status.as_str().expect("text").starts_with("Refused ?src="),
            "{status}"
        );
    }
    chromium.open(&server.url("/replays/three-1/view?src=/replays/three-1"));
}

/// A watched match of a model-using bot, on the largest seed a signature
/// binds: the viewer shows what the model said beside each exchange where it
/// was called (live, then from the session's transcript once the replay is
/// in), and still checks the signature over a seed of 2^53 - 1.
#[test]
fn the_viewer_shows_what_the_model_said_and_binds_a_large_seed() {
    let oracle = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bots/oracle.wasm");
    assert!(oracle.is_file(), "scripts/build-bots builds the oracle bot");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("oracle.json");
    let seed = duel_referee::limits::SEED_MAX.to_string();
    let mut watched = watch_support::Watched::start(&[
        "local",
        oracle.to_str().expect("utf-8"),
        "builtin:counter",
        "--seed",
        &seed,
        "--model-url",
        "builtin:house",
        "--replay",
        file.to_str().expect("utf-8"),
    ]);
    let url = watched.view_url();
    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    chromium.call("Page.navigate", json!({ "url": url }));
    chromium.wait_for(
        "document.body && document.body.dataset.state",
        &json!("ready"),
    );
    watched.line_containing("ctrl-c to stop");
    chromium.wait_for("document.body.dataset.signature", &json!("verified"));
    chromium.wait_for("document.body.dataset.transcript", &json!("shown"));
    let replay = duel_replays::Replay::read(&file).expect("the --replay file");
    assert_eq!(replay.seed, duel_referee::limits::SEED_MAX);
    let called = replay
        .exchanges()
        .filter(|(_, exchange)| !exchange.a.calls().is_empty())
        .count();
    assert!(called > 0, "the oracle asked the model");
    // At the end, every call is on the page with its answer.
    step_to(&mut chromium, replay.exchanges().count());
    assert_eq!(count(&mut chromium, ".notes .call"), called);
    assert_eq!(count(&mut chromium, ".notes .said"), called);
    assert_eq!(count(&mut chromium, ".notes details.prompt"), called);
    let text = page_text(&mut chromium);
    assert!(text.contains("The house model plays"), "{text}");
    assert!(text.contains("model house ·"), "{text}");
    chromium.screenshot(&screenshot_folder("viewer-screenshots").join("viewer-transcript.png"));
    drop(chromium);
    assert!(watched.interrupt().success());
}

/// A fork made by the real `referee local --from`, served beside its parent:
/// the viewer names the parent and links its viewer at the fork point, marks
/// the fork point in the exchange table, and the link opens the parent there.
#[test]
fn the_viewer_of_a_fork_links_its_parent_and_marks_the_fork_point() {
    let key = support::referee_key();
    let parent = support::signed(
        support::play(
            "fork-parent",
            "2026-05-01T20:00:00Z",
            WeightClass::Middle,
            21,
            "builtin:counter",
            "builtin:random",
        ),
        &key,
    );
    let folder = tempfile::tempdir().expect("temp dir");
    let parent_path = folder.path().join("parent.json");
    std::fs::write(&parent_path, parent.to_json_pretty()).expect("write");
    let fork_path = folder.path().join("fork.json");
    let from = format!("{}#r2e3", parent_path.display());
    referee(
        &[
            "local",
            "--from",
            &from,
            "--swap",
            "a=builtin:block",
            "--replay",
            fork_path.to_str().expect("utf-8"),
        ],
        folder.path(),
    );
    let fork = duel_replays::Replay::read(&fork_path).expect("the fork");
    let store_dir = tempfile::tempdir().expect("temp dir");
    let store = ReplayStore::open(&store_dir.path().display().to_string()).expect("open");
    for replay in [&parent, &fork] {
        support::runtime().block_on(store.put(replay)).expect("put");
    }
    let server = support::Server::start(store, &key, RateConfig::default());

    let Some(mut chromium) = Chromium::launch() else {
        return;
    };
    chromium.open(&server.url(&format!("/replays/{}/view", fork.match_id)));
    assert_shows_the_end(&mut chromium, &fork);
    assert_eq!(
        chromium.eval("document.getElementById('fork-note').hidden"),
        json!(false)
    );
    assert_eq!(
        chromium.eval("document.getElementById('fork-parent').getAttribute('href')"),
        json!("/replays/fork-parent/view#r2e3")
    );
    let note = chromium.eval("document.getElementById('fork-note').textContent");
    let note = note.as_str().expect("text");
    assert!(
        note.contains("Fork of match fork-parent at r2e3") && note.contains("A is builtin:block"),
        "{note}"
    );
    assert_eq!(count(&mut chromium, "tr.fork-head"), 1);
    assert_eq!(
        chromium.eval("document.querySelector('tr.fork-head').nextElementSibling.id"),
        json!("r2e3"),
        "the mark sits just before the first exchange played anew"
    );
    // The parent opens at the fork point, and is no fork itself.
    chromium.click("#fork-parent");
    chromium.wait_for(
        "document.body.dataset.frame",
        &json!(frame_of(&parent, 2, 3).to_string()),
    );
    assert_eq!(
        chromium.eval("document.getElementById('fork-note').hidden"),
        json!(true)
    );
}
