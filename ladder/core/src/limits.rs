//! Every limit of the ladder's rules, named and documented in one place:
//! names, transfers and the rake, owner quotas, ratings and matchmaking.

/// Owner quotas (`ladder serve --max-versions-per-owner` …): bot versions
/// across all of an owner's bots, bytes of distinct WASM components they
/// reference, and seconds spent validating (compiling) uploads per UTC day.
pub const DEFAULT_MAX_BOT_VERSIONS_PER_OWNER: u64 = 200;
pub const DEFAULT_MAX_STORED_BYTES_PER_OWNER: u64 = 512 * 1024 * 1024;
pub const DEFAULT_COMPILE_SECONDS_PER_DAY_PER_OWNER: u64 = 600;

/// The length of the day compile seconds are counted in (UTC days).
pub const QUOTA_DAY_MS: i64 = 86_400_000;

/// Longest bot, account and season name, in bytes (ASCII letters, digits, `-`, `_`, `.`).
pub const MAX_NAME_BYTES: usize = 64;

/// A bot's profile (crate::profile), set by its owner and shown on the site:
/// the longest description and author, in characters, and source URL, in
/// bytes. A description is a line or two, not a page.
pub const MAX_BOT_DESCRIPTION_CHARS: usize = 280;
pub const MAX_BOT_AUTHOR_CHARS: usize = 64;
pub const MAX_SOURCE_URL_BYTES: usize = 256;

/// Bots' logs of ranked matches (`match_logs`, kept for their owners):
/// how long a match's logs are kept (`--log-retention-days`), and how many
/// bytes of logs one owner keeps at most (`--max-log-bytes-per-owner`): past
/// it, that owner's oldest logs go first. A bot that logs to the referee's
/// bounds writes ~67 KB a match, so the default holds ~1,000 such matches.
pub const DEFAULT_LOG_RETENTION_DAYS: u32 = 90;
pub const MAX_LOG_RETENTION_DAYS: u32 = 3_650;
pub const DEFAULT_MAX_LOG_BYTES_PER_OWNER: u64 = 64 * 1024 * 1024;

/// Transcripts of ranked matches (what each bot's model was asked and
/// answered, kept in the replay store, rows in `match_transcripts`): how long
/// they are kept (`--transcript-retention-days`; longer than a season, so
/// that `--reveal-transcripts after-season` has something to reveal), and how
/// many bytes one owner's bots' parts take at most
/// (`--max-transcript-bytes-per-owner`): past it, that owner's oldest parts
/// go first. A model-using bot writes ~100 KB to a few MB a match.
pub const DEFAULT_TRANSCRIPT_RETENTION_DAYS: u32 = 365;
pub const MAX_TRANSCRIPT_RETENTION_DAYS: u32 = 3_650;
pub const DEFAULT_MAX_TRANSCRIPT_BYTES_PER_OWNER: u64 = 1024 * 1024 * 1024;

/// Transcript parts past their retention dropped per pass of the hourly
/// pruner, so one pass holds the store briefly; the next pass takes the rest.
pub const TRANSCRIPT_PRUNE_BATCH: i64 = 1_000;

/// The longest delay `--reveal-transcripts after-days:N` takes (ten years):
/// longer is `never`.
pub const MAX_REVEAL_DAYS: u32 = 3_650;

/// Longest transfer id and memo, in bytes.
pub const MAX_TRANSFER_ID_BYTES: usize = 128;
pub const MAX_MEMO_BYTES: usize = 256;

/// Largest stake or credit grant in one transfer. Keeps every sum of a match
/// (two stakes) and of the whole ledger far from `i64` overflow.
pub const MAX_TRANSFER_CREDITS: i64 = 1_000_000_000_000;

/// Default house rake in basis points (500 = 5%). The rake is the pot times the
/// rate, rounded down to whole credits, so rounding always favours the winner.
pub const DEFAULT_RAKE_BP: i64 = 500;

/// The largest rake an operator may set (basis points): 50%.
pub const MAX_RAKE_BP: i64 = 5_000;

/// A match is run at most this many times: the next claim of a match that never
/// settled (its third) voids it (stakes returned) instead of running it again.
pub const MAX_MATCH_RUNS: i64 = 2;

/// The cause of a failed run recorded on its match (`matches.last_failure`,
/// crate::failure) keeps at most this many characters, on one line: enough
/// for a step and the error a replay store or the referee gave (a replay too
/// large, a refused write), never a whole log.
pub const MAX_RUN_FAILURE_CHARS: usize = 300;

/// Matchmaking: the rating gap every bot accepts on its first wave, and how much
/// it widens for each wave it waited without a partner.
pub const BASE_RATING_GAP: f64 = 100.0;
pub const RATING_GAP_WIDEN_PER_WAVE: f64 = 50.0;

/// The widest gap ever allowed, however long a bot waited.
pub const MAX_RATING_GAP: f64 = 1_000.0;

/// How many rating-sorted neighbours each waiting bot considers per wave. Bounds
/// a wave to `O(n · NEIGHBOURS)` candidate pairs.
pub const MATCHMAKER_NEIGHBOURS: usize = 16;

/// Matchmaking: how many of a bot's latest opponents it remembers, and the
/// cost, in rating points, of each meeting with a candidate among them (a pair
/// that met twice lately is 2 × 50 points further apart). The latest opponent
/// is never met again at once.
pub const RECENT_OPPONENTS: usize = 24;
pub const RECENT_MEETING_PENALTY: f64 = 50.0;

/// Matchmaking: what a pair whose versions already repeated a game this season
/// pays on top, in rating points, to meet again (a repeat is not rated, so
/// the season's matches go to pairs that play new games while any are within
/// reach). Five recent meetings' worth: a bot still meets such a partner
/// when its other opponents are far or met far more often.
pub const REPEATED_PAIR_PENALTY: f64 = 250.0;

/// Ranked matches open with this many exchanges forced for both fighters,
/// drawn from the match's seed (duel_match::opening::Opening::random: each
/// fighter uniform over the actions it can pay for), and pinned on the match
/// at acceptance. Ruleset 1.0.0 has no randomness, so without an opening two
/// deterministic bots play one game however often they meet; with two
/// exchanges a pair has up to 6^4 = 1,296 openings, and a season's matches
/// are new games (docs/RULES.md, "Ranked matches open with two forced
/// exchanges").
pub const RANKED_OPENING_EXCHANGES: i64 = 2;

/// The most times two bots meet in one season. A backstop behind the penalty:
/// deterministic bots would otherwise fill a season with one game (docs/RULES.md).
pub const MAX_PAIR_MEETINGS_PER_SEASON: i64 = 40;

/// Glicko-2 system constant τ.
pub const GLICKO2_TAU: f64 = 0.5;

/// A bot is provisional while its rating deviation is at or above this.
pub const PROVISIONAL_DEVIATION: f64 = 110.0;

/// The season fit (crate::rating::season_fit) stops once its Newton step,
/// solved over all bots at once, moves no rating by more than this (Glicko-2
/// scale: 1e-9 is about 2e-7 rating points)...
pub const SEASON_FIT_TOLERANCE: f64 = 1e-9;
/// A Newton step that moves no rating by more than this (Glicko-2 scale,
/// about 0.17 points) is taken whole, without searching along it: that close
/// to the top the objective is flat to rounding, and a search on it would
/// stop short at a point that depends on the order of the games.
pub const SEASON_FIT_FULL_STEP: f64 = 1e-3;
/// ...or after this many Newton steps. Each solves for a step over all the
/// bots at once, so the common shift of a well-connected class (which only
/// the weak priors pin down, and which one bot at a time moves by a fraction
/// of a point per sweep) is found in one step; a handful is typical.
pub const SEASON_FIT_MAX_NEWTON_STEPS: usize = 100;
/// Conjugate-gradient iterations per Newton step (each one pass over the
/// games); with the curvature's diagonal as preconditioner a few dozen is
/// typical.
pub const SEASON_FIT_MAX_CG_ITERATIONS: usize = 2_000;
/// Halvings of a Newton step that does not raise the objective before the fit
/// takes the current point as its top (2^-40 of a step is below a double's
/// resolution of a rating).
pub const SEASON_FIT_MAX_HALVINGS: usize = 40;
/// The largest move of one rating in one Newton step (Glicko-2 scale, about
/// 174 points; a longer step is scaled down as a whole): keeps a bot with only
/// wins or only losses from overshooting while its estimate is far in a tail
/// of the logistic.
pub const SEASON_FIT_MAX_STEP: f64 = 1.0;

/// Standings rank by `rating − CONSERVATIVE_DEVIATIONS × deviation`.
pub const CONSERVATIVE_DEVIATIONS: f64 = 2.0;

/// Soft reset between seasons: the rating keeps this share of its distance
/// from 1500, and the deviation is raised to at least `SOFT_RESET_MIN_DEVIATION`
/// (never above the initial 350).
pub const SOFT_RESET_KEEP: f64 = 0.5;
pub const SOFT_RESET_MIN_DEVIATION: f64 = 150.0;

const _: () = assert!(MAX_RAKE_BP < 10_000);

const _: () = assert!(MAX_TRANSFER_CREDITS < i64::MAX / 1_000_000);
