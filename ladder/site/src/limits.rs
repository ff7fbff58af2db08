//! Every limit of the public site and Duel TV, named and documented in one
//! place.

/// Rows of a listing page (matches, a class's table) unless `limit=` asks fewer.
pub const SITE_PAGE_ROWS: usize = 50;

/// The most rows one page may ask for (`limit=`).
pub const MAX_SITE_PAGE_ROWS: usize = 200;

/// Rows of each class's table and of the latest matches on the home page.
pub const HOME_TOP_ROWS: usize = 10;

/// The longest token the owner's form on a match page takes, and the body
/// it is posted in: a ladder token is about 70 bytes.
pub const MAX_FORM_TOKEN_BYTES: usize = 512;
pub const MAX_FORM_BODY_BYTES: usize = 4 * 1024;

/// POSTs of the owner's transcript form (each looks a token up) one client
/// address (IPv6: its /64; behind `--trusted-proxy`, the forwarded address)
/// may make a second, and at once before that rate applies: by default the
/// API's own per-client rate (`duel_ladder::limits::DEFAULT_CALLS_PER_SECOND_PER_PEER`,
/// `DEFAULT_CALL_BURST_PER_PEER`, checked equal by a test), and like it set
/// by `ladder serve --calls-per-second-per-peer` and `--call-burst-per-peer`.
/// Over it: HTTP 429 with `Retry-After`, before the token is looked up.
pub const DEFAULT_FORM_POSTS_PER_SECOND: u32 = 50;
pub const DEFAULT_FORM_POST_BURST: u32 = 100;

/// Client addresses the form's rate limiter remembers before it drops the
/// idle ones (checked every 4,096 POSTs), as the API's gate does.
pub const MAX_FORM_RATE_LIMITED_CLIENTS: usize = 100_000;

/// A class's cost chart names at most this many of its frontier's bots (the
/// best-rated, then the cheapest first), where their labels fit; every other
/// point names its bot on hover. It bounds the labels' placement (each tried
/// in 8 places against every point) and keeps a chart of a thousand bots
/// from reading as a smudge.
pub const COST_CHART_LABELS: usize = 24;

/// A cost chart's label shows at most this many characters of a bot's name
/// (64 at most) and ends a longer one with "…": a whole long name would not
/// fit beside its point on a 600-unit chart.
pub const COST_CHART_LABEL_CHARS: usize = 20;

/// How long browsers and caches may reuse a page or its JSON twin.
pub const SITE_PAGE_MAX_AGE_S: u32 = 5;

/// Public transcript pages kept rendered ([`crate::transcripts`]): a heavy
/// match's page is about 2 MB and takes 25-30 ms to parse and render, six
/// times what sending the kept file takes, and a revealed transcript never
/// changes. At most this many pages, so about 32 MB.
pub const KEPT_TRANSCRIPT_PAGES: usize = 16;

/// Duel TV (`ladder serve --http`, [`crate::tv`]): the default pace of the
/// broadcast, one exchange every this many milliseconds
/// (`--tv-exchange-ms`): slow enough to follow, a 36-exchange match in ~25 s.
pub const DEFAULT_TV_EXCHANGE_MS: u64 = 700;

/// The slowest pace `--tv-exchange-ms` accepts (one exchange a minute).
pub const MAX_TV_EXCHANGE_MS: u64 = 60_000;

/// Between two broadcast matches Duel TV pauses this many exchanges' time,
/// so the result stays on screen for a moment.
pub const TV_PAUSE_EXCHANGES: u32 = 4;

/// How often Duel TV looks for a settled ranked match while it has none.
pub const TV_IDLE_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// How many of the latest settled ranked matches Duel TV chooses from.
pub const TV_CANDIDATE_MATCHES: usize = 5;

/// How many of its last broadcasts Duel TV avoids repeating while another
/// candidate exists: one less than the candidates, so a quiet ladder's last
/// matches are shown in turn.
pub const TV_RECENTLY_SHOWN: usize = TV_CANDIDATE_MATCHES - 1;

/// A win is an upset (said once its broadcast ended) when the winner's Glicko expected score against the
/// loser was at most this before the match (ratings and deviations from
/// `rating_history`; after it for a bot's first match of the season, when the
/// win has already narrowed the gap): about 100 points below at the
/// deviations of an established bot.
pub const TV_UPSET_MAX_EXPECTED_SCORE: f64 = 0.36;

/// A won match is a close one (said once its broadcast ended) when it was decided by one round and the damage dealt
/// differs by at most this share of the total, in percent. A draw is never
/// close: a draw of evenly traded jabs is not worth watching for that.
pub const TV_CLOSE_DAMAGE_PERCENT: u64 = 25;

/// Duel TV says why it picked a match from what was known before the bell:
/// one of the bots is in its class's top this many now, in a class of more
/// ("a top-3 bot")...
pub const TV_TOP_RANKS: i64 = 3;

/// ...or their ratings before the match were at most this many points
/// apart ("close ratings")...
pub const TV_CLOSE_RATINGS_POINTS: f64 = 50.0;

/// ...or the pair has settled at least this many matches ("a long rivalry").
pub const TV_RIVALRY_MEETINGS: i64 = 5;

/// How many matches `/tv` lists as airing next (what Duel TV would pick
/// after the one on air if nothing newer settled): the candidates but the
/// one on air.
pub const TV_QUEUE_MATCHES: usize = TV_CANDIDATE_MATCHES - 1;

/// How many ended broadcasts `/tv` lists, newest first.
pub const TV_PLAYLIST_BROADCASTS: usize = 10;

/// How many broadcasts Duel TV remembers to call a second showing a
/// "rerun" (ids only, about 50 bytes each); forgotten ones, and any before
/// the server started, would air as a first showing again.
pub const TV_REMEMBERED_BROADCASTS: usize = 10_000;

/// Events a Duel TV watcher may fall behind before it skips ahead (the
/// broadcast channel's capacity): more than one whole match (at most 38
/// events), so only a watcher that stopped reading for a minute skips.
pub const TV_WATCHER_LAG_EVENTS: usize = 64;

/// Most `GET /tv/events` watchers at once; one more is answered 503. Each holds the
/// current match's events by reference (a few hundred bytes) and a place in
/// the HTTP connection cap.
pub const MAX_TV_WATCHERS: usize = 2_000;

/// How often `GET /tv/events` sends a keep-alive comment when nothing happens:
/// the live feeds' interval, under the HTTP idle timeout.
pub const TV_KEEP_ALIVE: std::time::Duration = duel_referee::limits::LIVE_KEEP_ALIVE;

const _: () = assert!(DEFAULT_TV_EXCHANGE_MS <= MAX_TV_EXCHANGE_MS);
const _: () = assert!(TV_RECENTLY_SHOWN < TV_CANDIDATE_MATCHES);
const _: () =
    assert!(TV_KEEP_ALIVE.as_millis() < duel_referee::limits::HTTP_IDLE_TIMEOUT.as_millis());
