//! `ladder bench-site seed`: a synthetic ladder for the site's scale
//! benchmark. [`seed`] writes a consistent-looking ladder straight in SQL,
//! set-based (one `INSERT … SELECT` per table over a number series), so a
//! million matches take minutes on PostgreSQL. It lives here, beside the
//! benchmark, not in the store: the production store never writes a ladder
//! that was not played, and this SQL mirrors its schema (migrations in
//! `migrations/`) for a benchmark only.
//!
//! What is written: owners (one per [`BENCH_SITE_BOTS_PER_OWNER`] bots), bots
//! in three classes with one built-in version each, an ended season with its
//! frozen `standings` and a running one, a `ratings` row per bot and season
//! (its W/D/L counted from its matches), settled matches between bots of one
//! class and different owners with `finished_ms` spread over
//! [`BENCH_SITE_SPAN_DAYS`] and the facts settlement records (round score,
//! damage, exchanges, tokens and cost, rating change; side a calls a model in
//! every other match), and two `rating_history` rows per match. The
//! ledger (accounts, transfers) stays empty: the site never reads it. Replay
//! files are not written (`replay_path` is set, so pages link them); given a
//! replay store, transcripts are, for [`BENCH_SITE_TRANSCRIPTS`] of the ended
//! season's heavy matches ([`transcript_matches`]).
//!
//! Bot `n` is `bot-n` of class `n mod 3`; within its class it is number
//! `k = n div 3`. Class bot `k = 0` is the busiest (one match in
//! [`BENCH_SITE_BUSY_EVERY`] has it on side a) and `k = 2` its rival.

use std::time::{Duration, Instant};

use duel_replays::CallOutcome;
use duel_replays::store::ReplayStore;
use duel_replays::transcript::{
    FighterName, Transcript, TranscriptCall, TranscriptDecision, TranscriptMessage,
};
use duel_rules::{Ruleset, WeightClass};
use serde::Serialize;

use duel_ladder_core::limits::{CONSERVATIVE_DEVIATIONS, PROVISIONAL_DEVIATION};
use duel_ladder_store::Store;
use duel_ladder_store::site::{MatchCursor, StandingCursor};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use crate::error::{BenchError, Result};
use crate::limits::{
    BENCH_SITE_BOTS_PER_OWNER, BENCH_SITE_BUSY_EVERY, BENCH_SITE_ENDED_SHARE_PERCENT,
    BENCH_SITE_MIN_BOTS, BENCH_SITE_RIVALRY_EVERY, BENCH_SITE_SPAN_DAYS, BENCH_SITE_STAKE,
    BENCH_SITE_TRANSCRIPT_DECISIONS, BENCH_SITE_TRANSCRIPTS,
};

/// Every bot's season spend recomputed from the settled matches, as
/// migration 0010 first filled it: the sums, then the fallbacks.
const SEASON_SPEND_FROM_MATCHES: [&str; 2] = [
    "UPDATE ratings SET settled = s.settled, settled_wins = s.wins, settled_draws = s.draws, settled_losses = s.losses, tokens = s.tokens, cost_usd = s.cost, unpriced = s.unpriced, priced_wins = s.priced_wins, decisions = s.decisions FROM ( SELECT season_id, bot, COUNT(*) AS settled, SUM(won) AS wins, SUM(drawn) AS draws, SUM(lost) AS losses, SUM(tokens) AS tokens, COALESCE(SUM(cost), 0.0) AS cost, SUM(CASE WHEN cost IS NULL THEN 1 ELSE 0 END) AS unpriced, SUM(CASE WHEN cost IS NULL THEN 0 ELSE won END) AS priced_wins, SUM(decisions) AS decisions FROM ( SELECT m.season_id, m.bot_a AS bot, CASE WHEN m.winner = 'a' THEN 1 ELSE 0 END AS won, CASE WHEN m.winner = 'draw' THEN 1 ELSE 0 END AS drawn, CASE WHEN m.winner = 'b' THEN 1 ELSE 0 END AS lost, COALESCE(m.tokens_a, 0) AS tokens, m.cost_usd_a AS cost, COALESCE(m.exchanges, 0) AS decisions FROM matches m WHERE m.state = 'settled' UNION ALL SELECT m.season_id, m.bot_b AS bot, CASE WHEN m.winner = 'b' THEN 1 ELSE 0 END AS won, CASE WHEN m.winner = 'draw' THEN 1 ELSE 0 END AS drawn, CASE WHEN m.winner = 'a' THEN 1 ELSE 0 END AS lost, COALESCE(m.tokens_b, 0) AS tokens, m.cost_usd_b AS cost, COALESCE(m.exchanges, 0) AS decisions FROM matches m WHERE m.state = 'settled' ) sides GROUP BY season_id, bot ) s WHERE ratings.season_id = s.season_id AND ratings.bot_id = s.bot",
    "UPDATE ratings SET fallback_timeout = f.f_timeout, fallback_budget = f.f_budget, fallback_fault = f.f_fault FROM ( SELECT m.season_id, CASE WHEN f.side = 'a' THEN m.bot_a ELSE m.bot_b END AS bot, SUM(f.timeout) AS f_timeout, SUM(f.budget) AS f_budget, SUM(f.fault) AS f_fault FROM match_fallbacks f JOIN matches m ON m.id = f.match_id WHERE m.state = 'settled' GROUP BY m.season_id, CASE WHEN f.side = 'a' THEN m.bot_a ELSE m.bot_b END ) f WHERE ratings.season_id = f.season_id AND ratings.bot_id = f.bot",
];

/// Every bot's sums by model recomputed from the settled matches'
/// `match_models`, as migration 0012 first filled them.
const MODEL_SPEND_FROM_MATCHES: &str = "INSERT INTO model_spend (season_id, class, model, bot_id, matches, wins, draws, calls, tokens, cost_usd, unpriced, priced_wins) SELECT m.season_id, m.class, mm.model, CASE WHEN mm.side = 'a' THEN m.bot_a ELSE m.bot_b END, COUNT(*), SUM(CASE WHEN m.winner = mm.side THEN 1 ELSE 0 END), SUM(CASE WHEN m.winner = 'draw' THEN 1 ELSE 0 END), SUM(mm.calls), SUM(mm.tokens), COALESCE(SUM(mm.cost_usd), 0.0), SUM(CASE WHEN mm.cost_usd IS NULL THEN 1 ELSE 0 END), SUM(CASE WHEN mm.cost_usd IS NOT NULL AND m.winner = mm.side THEN 1 ELSE 0 END) FROM match_models mm JOIN matches m ON m.id = mm.match_id WHERE m.state = 'settled' GROUP BY m.season_id, m.class, mm.model, CASE WHEN mm.side = 'a' THEN m.bot_a ELSE m.bot_b END";

/// A pool on a ladder database the store has migrated: one connection, as
/// the seed's statements go one after the other (on SQLite, beside the
/// store's own writer, waiting for it as it would for another process).
pub async fn open(db_url: &str) -> Result<AnyPool> {
    sqlx::any::install_default_drivers();
    Ok(sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                if conn.backend_name().eq_ignore_ascii_case("sqlite") {
                    sqlx::raw_sql(
                        "PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON; \
                         PRAGMA synchronous = NORMAL;",
                    )
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(())
            })
        })
        .connect(db_url)
        .await?)
}

/// Reads a column, a type mismatch as a database error.
fn get<'r, T>(row: &'r AnyRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any>,
{
    Ok(row.try_get::<T, _>(column)?)
}

/// The seeded ladder's time origin (2026-01-01T00:00:00Z), in Unix ms.
const ORIGIN_MS: i64 = 1_767_225_600_000;
const DAY_MS: i64 = 86_400_000;

/// What `seed` wrote and how long each step took.
#[derive(Clone, Debug, Serialize)]
pub struct SeedReport {
    pub backend: &'static str,
    pub bots: u64,
    pub owners: u64,
    pub matches: u64,
    pub rating_history_rows: u64,
    /// Transcripts written to the replay store (0 without one).
    pub transcripts: u64,
    /// Each step's name and seconds, in order.
    pub steps: Vec<(String, f64)>,
    pub total_s: f64,
}

/// The SQL that differs between the two backends.
struct Sql {
    postgres: bool,
}

impl Sql {
    /// A relation `g` with one column `n` = 0 … count − 1.
    fn series(&self, count: u64) -> String {
        if self.postgres {
            format!(
                "generate_series(CAST(0 AS BIGINT), {}) AS g(n)",
                count.saturating_sub(1)
            )
        } else {
            format!(
                "(WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n + 1 < {count}) \
                 SELECT n FROM s) AS g"
            )
        }
    }

    /// `n` as text padded with zeros to eight digits.
    fn pad(&self, expr: &str) -> String {
        if self.postgres {
            format!("lpad(CAST({expr} AS TEXT), 8, '0')")
        } else {
            format!("printf('%08d', {expr})")
        }
    }
}

/// The price the seeded models' calls are charged at, per token (US$ 0.15 per
/// million, a small hosted model's input price).
const BENCH_SITE_USD_PER_TOKEN: f64 = 0.15e-6;

/// Seeds an empty ladder database (migrations run by [`Store::connect`]),
/// and transcripts into `replays` when given (the store `ladder serve
/// --replays` will read).
pub async fn seed(
    db_url: &str,
    bots: u64,
    matches: u64,
    replays: Option<&ReplayStore>,
) -> Result<SeedReport> {
    if bots < BENCH_SITE_MIN_BOTS {
        return Err(BenchError::Invalid(format!(
            "--bots must be at least {BENCH_SITE_MIN_BOTS}"
        )));
    }
    if matches == 0 || matches > i64::MAX as u64 / 1_000_000 {
        return Err(BenchError::Invalid(
            "--matches must be a positive number".to_owned(),
        ));
    }
    // The store migrates the database; the seed writes beside it.
    let store = Store::connect(db_url).await?;
    let db = open(db_url).await?;
    let existing: i64 = get(
        &sqlx::query("SELECT COUNT(*) AS n FROM bots")
            .fetch_one(&db)
            .await?,
        "n",
    )?;
    if existing > 0 {
        return Err(BenchError::Invalid(format!(
            "bench-site seed needs an empty database; this one has {existing} bots"
        )));
    }
    let sql = Sql {
        postgres: store.backend() == "postgres",
    };
    let per_class = bots / 3;
    let bots = per_class * 3;
    let owners = bots.div_ceil(BENCH_SITE_BOTS_PER_OWNER);
    let span_ms = BENCH_SITE_SPAN_DAYS * DAY_MS;
    let step_ms = (span_ms / i64::try_from(matches).unwrap_or(i64::MAX)).max(1);
    let split = matches * BENCH_SITE_ENDED_SHARE_PERCENT / 100;
    let split_ms = ORIGIN_MS + i64::try_from(split).unwrap_or(0) * step_ms;
    let ruleset = Ruleset::CURRENT.version();
    let budget = |class: WeightClass| Ruleset::CURRENT.budget_tokens(class);
    let class_of = |expr: &str| {
        format!("CASE {expr} WHEN 0 THEN 'light' WHEN 1 THEN 'middle' ELSE 'heavy' END")
    };
    let bot_number = "CAST(SUBSTR(b.id, 2) AS BIGINT)";
    // A bot's rating in a season: spread over 1200…1800 by its number, with
    // deviations 45…164 (some provisional).
    let rating_of = |number: &str, season: &str| {
        format!(
            "CAST(1200 + (({number} * 7919 + {season} * 104729) % 600) AS DOUBLE PRECISION) \
             + CAST(({number} * 13) % 100 AS DOUBLE PRECISION) / 100.0"
        )
    };
    let deviation_of = |number: &str, season: &str| {
        format!("CAST(45 + (({number} * 31 + {season} * 17) % 120) AS DOUBLE PRECISION)")
    };

    let steps: Vec<(&str, String)> = vec![
        (
            "users",
            format!(
                "INSERT INTO users (id, name, role, token_hash, created_ms) \
                 SELECT 'u' || n, 'owner-' || n, 'owner', 'bench-token-' || n, {origin} FROM {series}",
                origin = ORIGIN_MS - DAY_MS,
                series = sql.series(owners),
            ),
        ),
        (
            "bots",
            format!(
                "INSERT INTO bots (id, owner_id, name, class, current_version, created_ms) \
                 SELECT 'b' || n, 'u' || (n / {per_owner}), 'bot-' || n, {class}, 1, {origin} + n \
                 FROM {series}",
                per_owner = BENCH_SITE_BOTS_PER_OWNER,
                class = class_of("n % 3"),
                origin = ORIGIN_MS - DAY_MS,
                series = sql.series(bots),
            ),
        ),
        (
            "bot_versions",
            "INSERT INTO bot_versions (bot_id, version, kind, spec, digest, created_ms) \
             SELECT id, 1, 'builtin', 'builtin:counter', 'builtin:counter', created_ms FROM bots"
                .to_owned(),
        ),
        (
            "seasons",
            format!(
                "INSERT INTO seasons (id, name, started_ms, ended_ms) VALUES \
                 (1, 'bench-ended', {ORIGIN_MS}, {split_ms}), (2, 'bench-running', {split_ms}, NULL)"
            ),
        ),
        (
            "matches",
            // ka: side a's number in its class (the busiest bot one match in
            // BUSY_EVERY); kb: 2 … K−2 places further round the class, so the
            // two never share an owner (an owner's bots of one class are
            // numbers k and k+1 at most).
            format!(
                "INSERT INTO matches (id, season_id, class, ruleset, budget, seed, bot_a, version_a, owner_a, \
                 stake_a, bot_b, version_b, owner_b, stake_b, state, attempts, accepted_ms, finished_ms, \
                 winner, replay_path, rake_bp, round_wins_a, round_wins_b, damage_a, damage_b, exchanges, \
                 tokens_a, tokens_b, cost_usd_a, cost_usd_b, rating_change_a, rating_change_b) \
                 SELECT 'm' || {id}, CASE WHEN n < {split} THEN 1 ELSE 2 END, {class}, '{ruleset}', \
                 CASE c WHEN 0 THEN {b0} WHEN 1 THEN {b1} ELSE {b2} END, n, \
                 'b' || (3 * ka + c), 1, 'u' || ((3 * ka + c) / {per_owner}), {stake}, \
                 'b' || (3 * kb + c), 1, 'u' || ((3 * kb + c) / {per_owner}), {stake}, \
                 'settled', 1, {origin} + n * {step} - 1500, {origin} + n * {step}, \
                 CASE WHEN w < 45 THEN 'a' WHEN w < 90 THEN 'b' ELSE 'draw' END, \
                 'm' || {id} || '.json', 500, \
                 CASE WHEN w < 45 THEN 2 WHEN w < 90 THEN n % 2 ELSE 1 END, \
                 CASE WHEN w < 45 THEN n % 2 WHEN w < 90 THEN 2 ELSE 1 END, \
                 40 + n % 61, 40 + (n * 7) % 61, 10 + n % 31, \
                 CASE WHEN n % 2 = 0 THEN 200 + n % 800 ELSE 0 END, 0, \
                 CASE WHEN n % 2 = 1 THEN {zero} WHEN n % 3 = 2 THEN NULL \
                   ELSE {usd_per_token} * CAST(200 + n % 800 AS DOUBLE PRECISION) END, {zero}, \
                 CAST(CASE WHEN w < 45 THEN 4 + n % 16 WHEN w < 90 THEN -4 - n % 16 ELSE 0 END AS DOUBLE PRECISION), \
                 CAST(CASE WHEN w < 45 THEN -4 - n % 16 WHEN w < 90 THEN 4 + n % 16 ELSE 0 END AS DOUBLE PRECISION) \
                 FROM (SELECT n, c, ka, w, \
                   CASE WHEN n % {rivalry} = 0 THEN 2 ELSE (ka + 2 + (h / 7) % ({k} - 3)) % {k} END AS kb \
                   FROM (SELECT n, n % 3 AS c, (n * 2654435761) % 1000003 AS h, (n * 40503) % 100 AS w, \
                     CASE WHEN n % {busy} = 0 THEN 0 ELSE ((n * 2654435761) % 1000003) % {k} END AS ka \
                     FROM {series}) AS p) AS q",
                id = sql.pad("n"),
                class = class_of("c"),
                b0 = budget(WeightClass::Light),
                b1 = budget(WeightClass::Middle),
                b2 = budget(WeightClass::Heavy),
                per_owner = BENCH_SITE_BOTS_PER_OWNER,
                stake = BENCH_SITE_STAKE,
                origin = ORIGIN_MS,
                step = step_ms,
                rivalry = BENCH_SITE_RIVALRY_EVERY,
                busy = BENCH_SITE_BUSY_EVERY,
                k = per_class,
                series = sql.series(matches),
                zero = float_sql(0.0),
                usd_per_token = float_sql(BENCH_SITE_USD_PER_TOKEN),
            ),
        ),
        (
            "ratings",
            format!(
                "INSERT INTO ratings (season_id, bot_id, class, rating, deviation, volatility, games, wins, losses, draws) \
                 SELECT s.id, b.id, b.class, {rating}, {deviation}, 0.06, \
                 COALESCE(t.games, 0), COALESCE(t.wins, 0), COALESCE(t.losses, 0), COALESCE(t.draws, 0) \
                 FROM bots b CROSS JOIN seasons s LEFT JOIN (\
                   SELECT season_id, bot, COUNT(*) AS games, SUM(won) AS wins, SUM(lost) AS losses, SUM(drawn) AS draws FROM (\
                     SELECT season_id, bot_a AS bot, CASE winner WHEN 'a' THEN 1 ELSE 0 END AS won, \
                       CASE winner WHEN 'b' THEN 1 ELSE 0 END AS lost, CASE winner WHEN 'draw' THEN 1 ELSE 0 END AS drawn \
                     FROM matches \
                     UNION ALL SELECT season_id, bot_b, CASE winner WHEN 'b' THEN 1 ELSE 0 END, \
                       CASE winner WHEN 'a' THEN 1 ELSE 0 END, CASE winner WHEN 'draw' THEN 1 ELSE 0 END \
                     FROM matches) AS sides GROUP BY season_id, bot) AS t \
                 ON t.season_id = s.id AND t.bot = b.id",
                rating = rating_of(bot_number, "s.id"),
                deviation = deviation_of(bot_number, "s.id"),
            ),
        ),
        (
            "match_models",
            // Every other match, side a called one of three models (the
            // replays' `calls`, as settlement indexes them), so the cost
            // page's table by model reads rows, not an empty index.
            format!(
                "INSERT INTO match_models (match_id, side, model, calls, tokens, cost_usd) \
                 SELECT id, 'a', CASE seed % 3 WHEN 0 THEN 'bench-mini' WHEN 1 THEN 'bench-large' \
                 ELSE 'house' END, 2, 200 + seed % 800, \
                 CASE seed % 3 WHEN 2 THEN NULL ELSE {usd_per_token} * (200 + seed % 800) END \
                 FROM matches WHERE seed % 2 = 0",
                usd_per_token = float_sql(BENCH_SITE_USD_PER_TOKEN),
            ),
        ),
        ("season spend", SEASON_SPEND_FROM_MATCHES[0].to_owned()),
        ("season fallbacks", SEASON_SPEND_FROM_MATCHES[1].to_owned()),
        ("model spend", MODEL_SPEND_FROM_MATCHES.to_owned()),
        (
            "standings",
            format!(
                "INSERT INTO standings (season_id, bot_id, class, rank, bot_name, owner_name, rating, deviation, \
                 volatility, conservative, provisional, games, wins, losses, draws) \
                 SELECT r.season_id, r.bot_id, r.class, \
                 ROW_NUMBER() OVER (PARTITION BY r.class ORDER BY r.rating - {cd} * r.deviation DESC, b.name), \
                 b.name, u.name, r.rating, r.deviation, r.volatility, r.rating - {cd} * r.deviation, \
                 CASE WHEN r.deviation >= {provisional} THEN 1 ELSE 0 END, r.games, r.wins, r.losses, r.draws \
                 FROM ratings r JOIN bots b ON b.id = r.bot_id JOIN users u ON u.id = b.owner_id \
                 WHERE r.season_id = 1",
                cd = float_sql(CONSERVATIVE_DEVIATIONS),
                provisional = float_sql(PROVISIONAL_DEVIATION),
            ),
        ),
        (
            "rating_history",
            // Around the bot's season rating, ±40, with its deviation + 0…29.
                "INSERT INTO rating_history (bot_id, match_id, season_id, version, at_ms, rating, deviation) \
                 SELECT h.bot, h.id, h.season_id, 1, h.finished_ms, \
                 r.rating + CAST((h.seed * 7919) % 81 - 40 AS DOUBLE PRECISION), \
                 r.deviation + CAST(h.seed % 30 AS DOUBLE PRECISION) \
                 FROM (SELECT bot_a AS bot, id, season_id, finished_ms, seed FROM matches \
                       UNION ALL SELECT bot_b, id, season_id, finished_ms, seed + 1 FROM matches) AS h \
                 JOIN ratings r ON r.season_id = h.season_id AND r.bot_id = h.bot"
                .to_owned(),
        ),
        // VACUUM also marks the pages all-visible, as autovacuum would on a
        // ladder that has run a while, so index-only scans apply.
        (
            "analyze",
            if sql.postgres {
                "VACUUM ANALYZE"
            } else {
                "ANALYZE"
            }
            .to_owned(),
        ),
    ];

    let started = Instant::now();
    let mut timings = Vec::new();
    let mut transcripts = 0;
    for (name, statement) in steps {
        if name == "season spend"
            && let Some(replays) = replays
        {
            // Before the sums: the transcripts' matches spend more than
            // the others, and the sums must count it.
            let began = Instant::now();
            transcripts = seed_transcripts(&db, replays).await?;
            let seconds = secs(began.elapsed());
            tracing::info!(step = "transcripts", seconds, transcripts, "seeded");
            timings.push(("transcripts".to_owned(), seconds));
        }
        if name == "analyze" {
            // The running season's standings as `ladder serve` will have
            // them: its wave timer fits every class once it starts, and a
            // load that computed its cursors from the seeded ratings would
            // page through a table that no longer exists (docs/perf/site.md).
            // Solved without locks, then written with the class's ratings
            // rows locked: the second figure is how long settlements of the
            // class would wait on a fit of this size.
            let (mut solving, mut locked) = (Duration::ZERO, Duration::ZERO);
            for class in WeightClass::ALL {
                let began = Instant::now();
                let solved = store.solve_season_fit(class).await?;
                solving += began.elapsed();
                let began = Instant::now();
                if store.write_season_fit(&solved).await?.is_none() {
                    return Err(BenchError::FitChanged);
                }
                locked += began.elapsed();
            }
            for (step, took) in [
                ("season fit (solve, no locks)", solving),
                ("season fit (locked write)", locked),
            ] {
                let seconds = secs(took);
                tracing::info!(step, seconds, "seeded");
                timings.push((step.to_owned(), seconds));
            }
        }
        let began = Instant::now();
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&db)
            .await
            .map_err(|source| BenchError::Seeding { step: name, source })?;
        let seconds = secs(began.elapsed());
        tracing::info!(step = name, seconds, "seeded");
        timings.push((name.to_owned(), seconds));
    }
    let history: i64 = get(
        &sqlx::query("SELECT COUNT(*) AS n FROM rating_history")
            .fetch_one(&db)
            .await?,
        "n",
    )?;
    db.close().await;
    let backend = store.backend();
    store.close().await;
    Ok(SeedReport {
        backend,
        bots,
        owners,
        matches,
        rating_history_rows: u64::try_from(history).unwrap_or(0),
        transcripts,
        steps: timings,
        total_s: secs(started.elapsed()),
    })
}

/// The ended season's newest heavy matches in which side a called a model,
/// newest first, at most `limit`, with the model: those [`seed`] writes
/// transcripts for, the first of which a load reads.
pub async fn transcript_matches(db: &AnyPool, limit: i64) -> Result<Vec<(String, String)>> {
    let rows = sqlx::query(
        "SELECT m.id, mm.model FROM matches m \
         JOIN match_models mm ON mm.match_id = m.id AND mm.side = 'a' \
         WHERE m.state = 'settled' AND m.class = $1 \
         AND m.season_id = (SELECT MAX(id) FROM seasons WHERE ended_ms IS NOT NULL) \
         ORDER BY m.finished_ms DESC, m.id DESC LIMIT $2",
    )
    .bind(WeightClass::Heavy.name())
    .bind(limit)
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|row| Ok((get(row, "id")?, get(row, "model")?)))
        .collect()
}

/// Writes the transcripts of [`transcript_matches`] and records what their
/// calls spent in the matches' rows and model index.
async fn seed_transcripts(db: &AnyPool, replays: &ReplayStore) -> Result<u64> {
    let budget_tokens = Ruleset::CURRENT.budget_tokens(WeightClass::Heavy);
    let mut written = 0;
    for (id, model) in transcript_matches(db, BENCH_SITE_TRANSCRIPTS).await? {
        let transcript = synthetic_transcript(&id, &model, budget_tokens);
        let calls = transcript
            .decisions
            .iter()
            .flat_map(|decision| &decision.calls);
        let tokens: u64 = calls
            .map(|call| call.prompt_tokens + call.completion_tokens)
            .sum();
        replays.put_transcript(&transcript).await?;
        let tokens = i64::try_from(tokens).unwrap_or(i64::MAX);
        let cost = BENCH_SITE_USD_PER_TOKEN * tokens as f64;
        let mut writer = db.acquire().await?;
        sqlx::query(
            "UPDATE match_models SET calls = $1, tokens = $2, \
             cost_usd = CASE WHEN cost_usd IS NULL THEN NULL ELSE $3 END \
             WHERE match_id = $4 AND side = 'a'",
        )
        .bind(i64::try_from(transcript.decisions.len()).unwrap_or(i64::MAX))
        .bind(tokens)
        .bind(cost)
        .bind(id.clone())
        .execute(&mut *writer)
        .await?;
        sqlx::query(
            "UPDATE matches SET tokens_a = $1, \
             cost_usd_a = CASE WHEN cost_usd_a IS NULL THEN NULL ELSE $2 END WHERE id = $3",
        )
        .bind(tokens)
        .bind(cost)
        .bind(id)
        .execute(&mut *writer)
        .await?;
        written += 1;
    }
    Ok(written)
}

/// What a bot's model is told about the game, resent with every call.
const SYSTEM_PROMPT: &str = "You are a fighter in a Ruleset 1.0.0 duel. Each exchange both \
    fighters commit one action at once: JAB, CROSS, HOOK, FEINT, BLOCK, SLIP or REST. Heavier \
    strikes cost more stamina and beat the lighter ones they meet; BLOCK and SLIP answer \
    strikes; FEINT punishes a fighter who covers up. Answer with one action and one line \
    of reasoning. ";

/// Text of about `chars` bytes: `pattern` repeated, cut on a character
/// boundary (the patterns are ASCII).
fn filler(pattern: &str, chars: usize) -> String {
    pattern.chars().cycle().take(chars).collect()
}

/// A heavy fighter's transcript that spends `budget_tokens` over
/// [`BENCH_SITE_TRANSCRIPT_DECISIONS`] calls, at about four bytes a token: a
/// system prompt, the state with the fight so far, a short answer.
fn synthetic_transcript(id: &str, model: &str, budget_tokens: u64) -> Transcript {
    const BYTES_PER_TOKEN: u64 = 4;
    const EXCHANGES_PER_ROUND: u64 = 8;
    let decisions = BENCH_SITE_TRANSCRIPT_DECISIONS;
    let call_tokens = budget_tokens / decisions;
    let completion_tokens = (call_tokens / 50).max(16);
    let prompt_tokens = call_tokens.saturating_sub(completion_tokens);
    let system_bytes = (prompt_tokens * BYTES_PER_TOKEN / 4) as usize;
    let state_bytes = (prompt_tokens * BYTES_PER_TOKEN) as usize - system_bytes;
    let mut transcript = Transcript::new(id.to_owned());
    for decision in 0..decisions {
        let round = 1 + decision / EXCHANGES_PER_ROUND;
        let exchange = 1 + decision % EXCHANGES_PER_ROUND;
        let state = format!(
            "Round {round}, exchange {exchange}. Your HP 71, stamina 40; theirs 64 and 52. \
             Budget left {} tokens. The fight so far: ",
            budget_tokens - call_tokens * decision
        );
        let history = filler(
            "r1e1 JAB vs BLOCK; r1e2 FEINT vs SLIP; r1e3 CROSS vs JAB; ",
            state_bytes.saturating_sub(state.len()),
        );
        transcript.decisions.push(TranscriptDecision {
            round: u8::try_from(round).unwrap_or(u8::MAX),
            exchange: u8::try_from(exchange).unwrap_or(u8::MAX),
            fighter: FighterName::A,
            calls: vec![TranscriptCall {
                model: model.to_owned(),
                messages: vec![
                    TranscriptMessage {
                        role: "system".to_owned(),
                        content: filler(SYSTEM_PROMPT, system_bytes),
                    },
                    TranscriptMessage {
                        role: "user".to_owned(),
                        content: state + &history,
                    },
                ],
                completion: filler(
                    "CROSS: they rested last exchange and their stamina is up, so a JAB \
                     will not land; ",
                    (completion_tokens * BYTES_PER_TOKEN) as usize,
                ),
                prompt_tokens,
                completion_tokens,
                latency_us: 400_000 + 10_000 * decision,
                outcome: CallOutcome::Ok,
                truncated: false,
            }],
        });
    }
    transcript
}

fn secs(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64()
}

/// A float as an SQL literal both backends read as a double.
fn float_sql(value: f64) -> String {
    format!("CAST({value:?} AS DOUBLE PRECISION)")
}

/// What a load of a seeded ladder's pages needs to name them, found in SQL
/// rather than by walking pages: the running (else last) season, the class
/// and name of the bot with the most matches, its most frequent opponent,
/// and the cursors of a deep listing page and of a deep standings page.
#[derive(Clone, Debug)]
pub struct LoadTargets {
    pub season: String,
    pub class: String,
    /// Bots rated in `class` this season.
    pub in_class: i64,
    pub bot: String,
    pub bot_matches: i64,
    pub rival: String,
    /// Matches `bot` played on side a against `rival`.
    pub rivalry: i64,
    /// `bot`'s latest settled match on side a: a match page.
    pub latest_match: String,
    pub settled: i64,
    /// The listing page `listing_cursor` opens (1: no cursor) of `last_page`.
    pub listing_page: i64,
    pub last_page: i64,
    pub listing_cursor: Option<MatchCursor>,
    /// The standings page `standings_cursor` opens (1: no cursor), near 90 %.
    pub standings_page: i64,
    pub standings_cursor: Option<StandingCursor>,
    /// The newest of [`transcript_matches`]: its transcript, when the seed
    /// wrote them.
    pub transcript_match: Option<String>,
}

/// The pages of a seeded ladder, listing pages `page_rows` long, the deep
/// listing page at most `deep_listing_page`.
pub async fn load_targets(
    pool: &AnyPool,
    page_rows: i64,
    deep_listing_page: i64,
) -> Result<LoadTargets> {
    let not_seeded = || BenchError::Invalid("the database has no season: seed it first".to_owned());
    let season_row = sqlx::query(
        "SELECT id, name FROM seasons ORDER BY CASE WHEN ended_ms IS NULL THEN 0 ELSE 1 END, id DESC LIMIT 1",
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(not_seeded)?;
    let season_id: i64 = get(&season_row, "id")?;
    let season: String = get(&season_row, "name")?;
    let busiest = sqlx::query(
        "SELECT b.id, b.name, b.class, t.n FROM (SELECT bot_a, COUNT(*) AS n FROM matches \
         WHERE state = 'settled' GROUP BY bot_a ORDER BY n DESC, bot_a LIMIT 1) AS t \
         JOIN bots b ON b.id = t.bot_a",
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(|| BenchError::Invalid("the database has no settled match".to_owned()))?;
    let bot_id: String = get(&busiest, "id")?;
    let bot: String = get(&busiest, "name")?;
    let class: String = get(&busiest, "class")?;
    let rival_row = sqlx::query(
        "SELECT b.name, t.n FROM (SELECT bot_b, COUNT(*) AS n FROM matches WHERE bot_a = $1 \
         AND state = 'settled' GROUP BY bot_b ORDER BY n DESC, bot_b LIMIT 1) AS t \
         JOIN bots b ON b.id = t.bot_b",
    )
    .bind(bot_id.clone())
    .fetch_one(pool)
    .await?;
    let latest_match: String = get(
        &sqlx::query(
            "SELECT id FROM matches WHERE bot_a = $1 AND state = 'settled' \
             ORDER BY finished_ms DESC, id DESC LIMIT 1",
        )
        .bind(bot_id.clone())
        .fetch_one(pool)
        .await?,
        "id",
    )?;
    let bot_matches: i64 = get(
        &sqlx::query(
            "SELECT COUNT(*) AS n FROM matches WHERE (bot_a = $1 OR bot_b = $1) AND state = 'settled'",
        )
        .bind(bot_id.clone())
        .fetch_one(pool)
        .await?,
        "n",
    )?;

    // Listing page N starts after the last row of page N − 1.
    let settled: i64 = get(
        &sqlx::query("SELECT COUNT(*) AS n FROM matches WHERE state = 'settled'")
            .fetch_one(pool)
            .await?,
        "n",
    )?;
    let page_rows = page_rows.max(1);
    let last_page = (settled + page_rows - 1) / page_rows;
    let listing_page = deep_listing_page.min(last_page).max(1);
    let listing_cursor = if listing_page > 1 {
        let row = sqlx::query(
            "SELECT finished_ms, id FROM matches WHERE state = 'settled' \
             ORDER BY finished_ms DESC, id DESC LIMIT 1 OFFSET $1",
        )
        .bind((listing_page - 1) * page_rows - 1)
        .fetch_one(pool)
        .await?;
        Some(MatchCursor {
            finished_ms: get(&row, "finished_ms")?,
            id: get(&row, "id")?,
        })
    } else {
        None
    };

    // The class's table: one page near its end (a 90 % rank).
    let in_class: i64 = get(
        &sqlx::query("SELECT COUNT(*) AS n FROM ratings WHERE season_id = $1 AND class = $2")
            .bind(season_id)
            .bind(class.clone())
            .fetch_one(pool)
            .await?,
        "n",
    )?;
    let standings_page = (in_class * 9 / 10 / page_rows).max(1);
    let standings_cursor = if standings_page > 1 {
        let rank = (standings_page - 1) * page_rows;
        let row = sqlx::query(
            "SELECT b.name AS bot_name, r.rating - $1 * r.deviation AS conservative \
             FROM ratings r JOIN bots b ON b.id = r.bot_id WHERE r.season_id = $2 AND r.class = $3 \
             ORDER BY conservative DESC, b.name LIMIT 1 OFFSET $4",
        )
        .bind(CONSERVATIVE_DEVIATIONS)
        .bind(season_id)
        .bind(class.clone())
        .bind(rank - 1)
        .fetch_one(pool)
        .await?;
        Some(StandingCursor {
            rank,
            conservative: get(&row, "conservative")?,
            bot: get(&row, "bot_name")?,
        })
    } else {
        None
    };
    Ok(LoadTargets {
        season,
        class,
        in_class,
        bot,
        bot_matches,
        rival: get(&rival_row, "name")?,
        rivalry: get(&rival_row, "n")?,
        latest_match,
        settled,
        listing_page,
        last_page,
        listing_cursor,
        standings_page,
        standings_cursor,
        transcript_match: transcript_matches(pool, 1)
            .await?
            .into_iter()
            .next()
            .map(|(id, _)| id),
    })
}
