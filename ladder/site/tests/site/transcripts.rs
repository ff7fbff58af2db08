//! Transcripts for everyone, served on loopback as `ladder serve --http` does.
//! `/matches/{id}/transcript` is a page of the site: until the reveal policy
//! allows, a 404 page that says when the transcript will be public (after
//! the season, on a date, never); then the calls per exchange with the
//! prompts folded. Its JSON twin `/api/matches/{id}/transcript` and the
//! viewer's `/replays/{id}/transcript` give a 404 with a JSON error, then the
//! kept transcript byte for byte. `never` never reveals, `after-days:0` at
//! once; an unknown match is a 404, a malformed id a 400, a match whose
//! fighters called no model a 404. SQLite and PostgreSQL.

use crate::common;

use std::net::SocketAddr;

use common::TestDb;
use duel_ladder_core::model::{BotSource, Winner};
use duel_ladder_core::reveal::RevealPolicy;
use duel_ladder_store::PairSide;
use duel_replays::CallOutcome;
use duel_replays::store::ReplayStore;
use duel_replays::transcript::{
    FighterName, Transcript, TranscriptCall, TranscriptDecision, TranscriptMessage,
};
use serde_json::Value;

/// Settles one match between two new bots of two new owners; its id and
/// the owners' tokens (side a's, then b's).
async fn settled_match(db: &TestDb, tag: &str) -> (String, Vec<String>) {
    let mut ids = Vec::new();
    let mut tokens = Vec::new();
    for side in ["x", "y"] {
        let name = format!("{side}-{tag}");
        let (owner, token) = db.owner(&format!("owner-{name}"), 1_000).await;
        tokens.push(token);
        let bot = db
            .store
            .register_bot(
                &owner,
                &name,
                "light",
                &BotSource::builtin("builtin:random".to_owned()),
            )
            .await
            .expect("register");
        ids.push(bot.id);
    }
    let game = duel_ladder::wave::accept_pair(
        &db.store,
        [0, 1].map(|index| PairSide {
            bot_id: ids[index].clone(),
            stake: 10,
        }),
    )
    .await
    .expect("accept");
    // Settled now, as a worker would: `after-days:N` counts from here.
    let now = duel_ladder_core::clock::now_ms();
    let claim = db
        .store
        .claim(60_000, now - 1_000)
        .await
        .expect("claim")
        .expect("queued");
    db.store
        .complete(&game.id, &claim.lease_id, Winner::A, "r.json", None, now)
        .await
        .expect("settle");
    (game.id, tokens)
}

fn transcript_of(match_id: &str) -> Transcript {
    let mut transcript = Transcript::new(match_id.to_owned());
    transcript.decisions.push(TranscriptDecision {
        round: 1,
        exchange: 1,
        fighter: FighterName::A,
        calls: vec![TranscriptCall {
            model: "house".to_owned(),
            messages: vec![TranscriptMessage {
                role: "user".to_owned(),
                content: "You face a blocker. <b>Move?</b>".to_owned(),
            }],
            completion: "FEINT".to_owned(),
            prompt_tokens: 12,
            completion_tokens: 2,
            latency_us: 900,
            outcome: CallOutcome::Ok,
            truncated: false,
        }],
    });
    transcript
}

async fn serve(db: &TestDb, replays: &ReplayStore, policy: RevealPolicy) -> String {
    let router = duel_ladder_site::transcripts::router(
        db.store.reads(),
        replays.clone(),
        policy,
        duel_ladder_site::transcripts::FormRate::default(),
    );
    let loopback: SocketAddr = "127.0.0.1:0".parse().expect("address");
    let listener = tokio::net::TcpListener::bind(loopback).await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

async fn get(base: &str, path: &str) -> (u16, String) {
    let (status, _, body) = get_typed(base, path).await;
    (status, body)
}

/// Status, content type and body.
async fn get_typed(base: &str, path: &str) -> (u16, String, String) {
    let response = reqwest::get(format!("{base}{path}"))
        .await
        .expect("request");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, content_type, response.text().await.expect("body"))
}

/// A page of the site (its stylesheet, its header) with `status`.
async fn site_page(base: &str, path: &str, status: u16) -> String {
    let (got, content_type, body) = get_typed(base, path).await;
    assert_eq!(got, status, "{path}: {body}");
    assert!(
        content_type.starts_with("text/html"),
        "{path}: {content_type}"
    );
    assert!(
        body.starts_with("<!DOCTYPE html>") && body.contains("/site/site.css"),
        "{path}: {body}"
    );
    body
}

fn error_of(body: &str) -> String {
    let value: Value = serde_json::from_str(body).expect("a JSON error");
    value["error"].as_str().expect("error").to_owned()
}

async fn transcripts_revealed(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = ReplayStore::open(&dir.path().display().to_string()).expect("store");
    let (spoken, tokens) = settled_match(db, "spoken").await;
    let (silent, _) = settled_match(db, "silent").await;
    let (_, strangers) = settled_match(db, "stranger").await;
    let kept = transcript_of(&spoken);
    replays.put_transcript(&kept).await.expect("keep");

    let after_season = serve(db, &replays, RevealPolicy::AfterSeason).await;
    let never = serve(db, &replays, RevealPolicy::Never).await;
    let at_once = serve(db, &replays, RevealPolicy::AfterDays(0)).await;

    let in_a_week = serve(db, &replays, RevealPolicy::AfterDays(7)).await;

    // While the season runs: hidden under the default policy and `never`,
    // public under `after-days:0`. The JSON twin and the viewer's address
    // say so in a JSON error; the page says when, with the site around it.
    for path in [
        format!("/api/matches/{spoken}/transcript"),
        format!("/replays/{spoken}/transcript"),
    ] {
        let (status, content_type, body) = get_typed(&after_season, &path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(
            content_type.starts_with("application/json"),
            "{content_type}"
        );
        assert!(
            error_of(&body).contains("public once its season ends"),
            "{body}"
        );
    }
    let page = site_page(&after_season, &format!("/matches/{spoken}/transcript"), 404).await;
    assert!(
        page.contains("will be public once season <a href=\"/seasons/s1\">s1</a> ends"),
        "{page}"
    );
    assert!(
        page.contains(&format!("href=\"/api/matches/{spoken}/transcript\"")),
        "the page names its JSON twin: {page}"
    );
    assert!(
        page.contains(&format!("href=\"/matches/{spoken}\"")),
        "{page}"
    );
    assert!(!page.contains("FEINT"), "no call before the reveal: {page}");
    let page = site_page(&never, &format!("/matches/{spoken}/transcript"), 404).await;
    assert!(
        page.contains("this ladder never makes its transcripts public"),
        "{page}"
    );
    let page = site_page(&in_a_week, &format!("/matches/{spoken}/transcript"), 404).await;
    let finished = db
        .store
        .reads()
        .game(&spoken)
        .await
        .expect("game")
        .finished_ms;
    let on = duel_ladder_core::model::utc_text(finished.expect("settled") + 7 * 86_400_000);
    assert!(
        page.contains(&format!("will be public on {on}, 7 days after the match")),
        "{on}: {page}"
    );
    let (status, body) = get(&at_once, &format!("/api/matches/{spoken}/transcript")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        kept.to_json_pretty(),
        "the kept transcript, byte for byte"
    );
    // The page: per exchange, each fighter's calls, the prompt folded and
    // escaped, the completion, the tokens.
    let page = site_page(&at_once, &format!("/matches/{spoken}/transcript"), 200).await;
    for expected in [
        "id=\"r1e1\"",
        "id=\"r1e1a\"",
        "Round 1 · exchange 1",
        "x-spoken",
        "<code>house</code>",
        "14 tokens (12 prompt + 2 completion)",
        "<details class=\"prompt\"><summary>Prompt: 1 message, 12 tokens</summary>",
        "You face a blocker. &lt;b&gt;Move?&lt;/b&gt;",
        "<pre>FEINT</pre>",
        "1 model call in 1 decision.",
    ] {
        assert!(page.contains(expected), "{expected}: {page}");
    }
    assert!(!page.contains("id=\"r1e1b\""), "side b called no model");

    // Its owner reads its bot's calls at once from the match page's form,
    // escaped and never cached; the other owner's bot called no model; a
    // stranger and a bad token are refused.
    let client = reqwest::Client::new();
    let post = |base: &str, token: &str| {
        client
            .post(format!("{base}/matches/{spoken}/transcript"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
    };
    let owner = post(&after_season, &tokens[0]).await.expect("post");
    assert_eq!(owner.status().as_u16(), 200);
    assert_eq!(owner.headers()["cache-control"], "no-store");
    let page = owner.text().await.expect("page");
    assert!(
        page.contains("You face a blocker. &lt;b&gt;Move?&lt;/b&gt;"),
        "{page}"
    );
    assert!(
        page.contains("FEINT") && page.contains("x-spoken"),
        "{page}"
    );
    for (token, status, says) in [
        (tokens[1].as_str(), 404, "your bot called no model"),
        (strangers[0].as_str(), 403, "owns neither of its bots"),
        ("not-a-token", 401, "matches no account"),
        ("", 401, "give the token"),
    ] {
        let refused = post(&after_season, token).await.expect("post");
        assert_eq!(refused.status().as_u16(), status, "{token}");
        assert_eq!(refused.headers()["cache-control"], "no-store");
        let body = refused.text().await.expect("page");
        assert!(body.contains(says), "{token}: {body}");
    }

    db.store.end_season().await.expect("end");
    for path in [
        format!("/api/matches/{spoken}/transcript"),
        format!("/replays/{spoken}/transcript"),
    ] {
        let (status, body) = get(&after_season, &path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(
            Transcript::from_slice(body.as_bytes()).expect("a transcript"),
            kept
        );
    }
    let page = site_page(&after_season, &format!("/matches/{spoken}/transcript"), 200).await;
    assert!(page.contains("<pre>FEINT</pre>"), "{page}");
    // The second reader gets the page kept rendered: the same page.
    let again = site_page(&after_season, &format!("/matches/{spoken}/transcript"), 200).await;
    assert_eq!(again, page);
    let (status, body) = get(&never, &format!("/api/matches/{spoken}/transcript")).await;
    assert_eq!(status, 404, "{body}");
    assert!(error_of(&body).contains("never made public"), "{body}");
    let page = site_page(&never, &format!("/matches/{spoken}/transcript"), 404).await;
    assert!(
        page.contains("never makes its transcripts public"),
        "{page}"
    );
    let (status, body) = get(&after_season, &format!("/api/matches/{silent}/transcript")).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        error_of(&body).contains("no fighter called a model"),
        "{body}"
    );
    let page = site_page(&after_season, &format!("/matches/{silent}/transcript"), 404).await;
    assert!(page.contains("no fighter called a model"), "{page}");
    for prefix in ["", "/api"] {
        let (status, body) = get(
            &after_season,
            &format!("{prefix}/matches/no-such-match/transcript"),
        )
        .await;
        assert_eq!(status, 404, "{prefix}: {body}");
        let (status, body) = get(
            &after_season,
            &format!("{prefix}/matches/..%2Fetc/transcript"),
        )
        .await;
        assert_eq!(status, 400, "{prefix}: {body}");
    }
}
both_backends!(transcripts_after_the_reveal, transcripts_revealed);

/// The sides whose decisions a transcript page shows (its sections' ids end
/// in the fighter's letter).
fn sides_on_page(page: &str) -> Vec<&'static str> {
    ["a", "b"]
        .into_iter()
        .filter(|side| page.contains(&format!("id=\"r1e1{side}\"")))
        .collect()
}

fn sides_of(transcript: &Transcript) -> Vec<&'static str> {
    ["a", "b"]
        .into_iter()
        .filter(|side| {
            transcript
                .decisions
                .iter()
                .any(|decision| (decision.fighter == FighterName::A) == (*side == "a"))
        })
        .collect()
}

/// The site and the API's `MatchTranscript` read transcripts by one rule
/// (core::reveal::readable_sides, with `Reads::transcript_revealed`): for
/// every policy, before and after the season's end, each reader (both
/// owners, a stranger, an operator, someone without a token) reads the same
/// sides from the site as from the API, or is refused alike.
async fn the_api_and_the_site_agree(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = ReplayStore::open(&dir.path().display().to_string()).expect("store");
    let (id, tokens) = settled_match(db, "both").await;
    let (stranger, stranger_token) = db.owner("stranger", 0).await;
    let (root, root_token) = db
        .store
        .create_user("root", duel_ladder_core::auth::Role::Operator)
        .await
        .expect("operator");
    let mut kept = transcript_of(&id);
    let mut other = kept.decisions[0].clone();
    other.fighter = FighterName::B;
    kept.decisions.push(other);
    replays.put_transcript(&kept).await.expect("keep");
    let owner_a = db
        .store
        .reads()
        .authenticate(&tokens[0])
        .await
        .expect("owner a");
    let owner_b = db
        .store
        .reads()
        .authenticate(&tokens[1])
        .await
        .expect("owner b");
    let readers = [
        ("owner a", &owner_a, tokens[0].as_str()),
        ("owner b", &owner_b, tokens[1].as_str()),
        ("a stranger", &stranger, stranger_token.as_str()),
        ("an operator", &root, root_token.as_str()),
    ];
    let policies = [
        RevealPolicy::Never,
        RevealPolicy::AfterSeason,
        RevealPolicy::AfterDays(0),
    ];
    let client = reqwest::Client::new();
    for season_ended in [false, true] {
        if season_ended {
            db.store.end_season().await.expect("end");
        }
        for policy in policies {
            let site = serve(db, &replays, policy).await;
            let api = duel_ladder::ladder::Ladder::new(db.store.clone(), common::host(), true)
                .with_replays(replays.clone())
                .with_reveal(policy);
            let revealed = season_ended && policy == RevealPolicy::AfterSeason
                || policy == RevealPolicy::AfterDays(0);
            let context = format!("{policy:?}, season ended: {season_ended}");
            for (who, user, token) in readers {
                let posted = client
                    .post(format!("{site}/matches/{id}/transcript"))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(format!("token={token}"))
                    .send()
                    .await
                    .expect("post");
                let status = posted.status().as_u16();
                let page = posted.text().await.expect("page");
                let from_site = match status {
                    200 => Ok(sides_on_page(&page)),
                    refused => Err(refused),
                };
                let from_api = match api.match_transcript(user, &id, None).await {
                    Ok(transcript) => Ok(sides_of(&transcript)),
                    Err(duel_ladder::ServiceError::Ladder(
                        duel_ladder::LadderError::PermissionDenied(_),
                    )) => Err(403),
                    Err(duel_ladder::ServiceError::Ladder(duel_ladder::LadderError::NotFound(
                        _,
                    ))) => Err(404),
                    Err(error) => panic!("{context}, {who}: {error}"),
                };
                assert_eq!(from_site, from_api, "{context}, {who}: {page}");
                let expected = match (who, revealed) {
                    (_, true) | ("an operator", false) => Ok(vec!["a", "b"]),
                    ("owner a", false) => Ok(vec!["a"]),
                    ("owner b", false) => Ok(vec!["b"]),
                    _ => Err(403),
                };
                assert_eq!(from_api, expected, "{context}, {who}");
            }
            // Without a token, the site's public page and its JSON twin:
            // both sides once revealed, a 404 before.
            let page = site_page(
                &site,
                &format!("/matches/{id}/transcript"),
                if revealed { 200 } else { 404 },
            )
            .await;
            assert_eq!(
                sides_on_page(&page),
                if revealed { vec!["a", "b"] } else { vec![] },
                "{context}"
            );
            let (status, body) = get(&site, &format!("/api/matches/{id}/transcript")).await;
            assert_eq!(
                status,
                if revealed { 200 } else { 404 },
                "{context}: {body}"
            );
        }
    }
}
both_backends!(
    the_api_and_the_site_agree_on_who_reads_a_transcript,
    the_api_and_the_site_agree
);

/// The form's rate is the API's per-client rate by default.
#[test]
fn the_form_takes_the_apis_rate() {
    use duel_ladder_site::limits::{DEFAULT_FORM_POST_BURST, DEFAULT_FORM_POSTS_PER_SECOND};
    assert_eq!(
        DEFAULT_FORM_POSTS_PER_SECOND,
        duel_ladder::limits::DEFAULT_CALLS_PER_SECOND_PER_PEER
    );
    assert_eq!(
        DEFAULT_FORM_POST_BURST,
        duel_ladder::limits::DEFAULT_CALL_BURST_PER_PEER
    );
}

/// Bad-token POSTs from `client` (a loopback source address, with
/// `X-Forwarded-For: forwarded` if given) until the first 429 or `most`
/// tries: the answers' statuses, and the 429 if one came.
async fn post_until_refused(
    base: &str,
    path: &str,
    client: std::net::IpAddr,
    forwarded: Option<&str>,
    most: usize,
) -> (Vec<u16>, Option<reqwest::Response>) {
    let http = reqwest::Client::builder()
        .local_address(client)
        .build()
        .expect("client");
    let mut statuses = Vec::new();
    for _ in 0..most {
        let mut request = http
            .post(format!("{base}{path}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("token=dlt_not-a-token");
        if let Some(forwarded) = forwarded {
            request = request.header("x-forwarded-for", forwarded);
        }
        let response = request.send().await.expect("post");
        let status = response.status().as_u16();
        if status == 429 {
            return (statuses, Some(response));
        }
        statuses.push(status);
    }
    (statuses, None)
}

/// The owner form is rate limited before it looks a token up (300 bad-token
/// POSTs from one address were once all looked up): one address gets
/// its burst (100) and the rate (50 a second), then 429 with `Retry-After`
/// before any lookup; another address, and behind a trusted proxy another
/// forwarded client, still gets through.
async fn the_owner_form_is_rate_limited(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let dir = tempfile::tempdir().expect("temp dir");
    let replays = ReplayStore::open(&dir.path().display().to_string()).expect("store");
    let (id, _) = settled_match(db, "limited").await;
    let rate = duel_ladder_site::transcripts::FormRate::default();
    let router = duel_ladder_site::transcripts::router(
        db.store.reads(),
        replays.clone(),
        RevealPolicy::AfterSeason,
        rate,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let limits = duel_plumbing::listen::HttpLimits {
        trusted_proxies: duel_plumbing::clients::TrustedProxies::new(vec![
            duel_plumbing::clients::parse_trusted_proxy("127.0.0.4").expect("proxy"),
        ]),
        ..duel_plumbing::listen::HttpLimits::default()
    };
    tokio::spawn(duel_plumbing::listen::serve_router(
        listener,
        router,
        limits,
        std::future::pending(),
    ));
    let path = format!("/matches/{id}/transcript");
    let burst = usize::try_from(rate.burst.get()).expect("small");
    let per_second = f64::from(rate.per_second.get());

    for (client, forwarded, other) in [
        ("127.0.0.2", None, ("127.0.0.3", None)),
        (
            "127.0.0.4",
            Some("192.0.2.7"),
            ("127.0.0.4", Some("192.0.2.8")),
        ),
    ] {
        let started = std::time::Instant::now();
        let (answered, refused) = post_until_refused(
            &base,
            &path,
            client.parse().expect("address"),
            forwarded,
            1_000,
        )
        .await;
        let elapsed = started.elapsed().as_secs_f64();
        let refused =
            refused.unwrap_or_else(|| panic!("{client} {forwarded:?}: 1,000 POSTs and no 429"));
        assert!(answered.iter().all(|status| *status == 401), "{answered:?}");
        // The burst at once, then no more than the rate has refilled since.
        assert!(answered.len() >= burst, "{} answered", answered.len());
        assert!(
            answered.len() as f64 <= burst as f64 + per_second * elapsed + 1.0,
            "{} answered in {elapsed:.2} s",
            answered.len()
        );
        let retry: u64 = refused.headers()["retry-after"]
            .to_str()
            .expect("ASCII")
            .parse()
            .expect("seconds");
        assert!(retry >= 1, "{retry}");
        assert_eq!(refused.headers()["cache-control"], "no-store");
        assert!(
            refused.headers()["content-security-policy"]
                .to_str()
                .expect("ASCII")
                .contains("frame-ancestors 'none'")
        );
        let page = refused.text().await.expect("page");
        assert!(
            page.contains("too many tries from your address: more than 50 a second (burst 100)"),
            "{page}"
        );
        // Another client still gets through (its bad token is a 401).
        let (other_client, other_forwarded) = other;
        let (answered, refused) = post_until_refused(
            &base,
            &path,
            other_client.parse().expect("address"),
            other_forwarded,
            1,
        )
        .await;
        assert_eq!((answered, refused.is_none()), (vec![401], true));
    }
}
both_backends!(
    the_owner_form_is_rate_limited_per_client,
    the_owner_form_is_rate_limited
);
