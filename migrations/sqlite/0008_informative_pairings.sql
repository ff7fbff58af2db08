-- Pairings that produce information (docs/RULES.md, "Pairings" and "Repeats
-- are not rated").
--
-- Each bot's latest opponents, the latest first, separated by spaces (at most
-- matchmaker::RECENT_OPPONENTS): the wave penalises meeting them again. The
-- old last_opponent is the first of them.
ALTER TABLE bots ADD COLUMN recent_opponents TEXT;
UPDATE bots SET recent_opponents = last_opponent WHERE last_opponent IS NOT NULL;

-- How often each pair met in each season (the pair's smaller bot id first),
-- counted at acceptance: a pair at limits::MAX_PAIR_MEETINGS_PER_SEASON does
-- not meet again that season.
CREATE TABLE pair_meetings (
    season_id BIGINT NOT NULL,
    bot_low TEXT NOT NULL,
    bot_high TEXT NOT NULL,
    class TEXT NOT NULL,
    meetings BIGINT NOT NULL,
    PRIMARY KEY (season_id, bot_low, bot_high)
);
CREATE INDEX pair_meetings_exhausted ON pair_meetings (season_id, class, meetings);
INSERT INTO pair_meetings (season_id, bot_low, bot_high, class, meetings)
SELECT season_id,
       CASE WHEN bot_a < bot_b THEN bot_a ELSE bot_b END,
       CASE WHEN bot_a < bot_b THEN bot_b ELSE bot_a END,
       MIN(class), COUNT(*)
FROM matches
GROUP BY season_id, CASE WHEN bot_a < bot_b THEN bot_a ELSE bot_b END,
         CASE WHEN bot_a < bot_b THEN bot_b ELSE bot_a END;

-- A settled match's play key (repeat::play_key: both versions and every
-- exchange's actions), its pair key (the two versions alone), and whether it
-- was rated: not_rated is NULL for a rated match, 'repeat' for one that
-- repeats the rated match repeat_of move for move, 'pair_rated' when the two
-- versions already had their rated games of the season (repeat::verdict).
ALTER TABLE matches ADD COLUMN play_key TEXT;
ALTER TABLE matches ADD COLUMN pair_key TEXT;
ALTER TABLE matches ADD COLUMN not_rated TEXT;
ALTER TABLE matches ADD COLUMN repeat_of TEXT;
CREATE INDEX matches_pair_key ON matches (pair_key);

-- What a settled match's replay says, for listings and the cost of a win
-- (model::PlayRecord): rounds won and damage dealt by each side, exchanges
-- played, model tokens each side spent and what they cost in US dollars at
-- the catalogue prices the replay recorded (NULL: a model called had no
-- price), and each side's rating change (NULL: not rated). NULL for matches
-- settled before this migration.
ALTER TABLE matches ADD COLUMN round_wins_a BIGINT;
ALTER TABLE matches ADD COLUMN round_wins_b BIGINT;
ALTER TABLE matches ADD COLUMN damage_a BIGINT;
ALTER TABLE matches ADD COLUMN damage_b BIGINT;
ALTER TABLE matches ADD COLUMN exchanges BIGINT;
ALTER TABLE matches ADD COLUMN tokens_a BIGINT;
ALTER TABLE matches ADD COLUMN tokens_b BIGINT;
ALTER TABLE matches ADD COLUMN cost_usd_a DOUBLE PRECISION;
ALTER TABLE matches ADD COLUMN cost_usd_b DOUBLE PRECISION;
ALTER TABLE matches ADD COLUMN rating_change_a DOUBLE PRECISION;
ALTER TABLE matches ADD COLUMN rating_change_b DOUBLE PRECISION;

-- What a win cost (docs/areas/ladder.md, "What a win cost"): the decisions
-- each side of a settled match lost to the fallback, by cause (a row only for
-- a side that lost some), and each side's calls to each catalogue model as
-- the replay recorded them (cost_usd NULL: the model had no price).
CREATE TABLE match_fallbacks (
    match_id TEXT NOT NULL,
    side TEXT NOT NULL,
    timeout BIGINT NOT NULL,
    budget BIGINT NOT NULL,
    fault BIGINT NOT NULL,
    PRIMARY KEY (match_id, side)
);
-- The cost page reads one class's settled matches of one season.
CREATE INDEX matches_season_class ON matches (season_id, class, state);
CREATE TABLE match_models (
    match_id TEXT NOT NULL,
    side TEXT NOT NULL,
    model TEXT NOT NULL,
    calls BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    cost_usd DOUBLE PRECISION,
    PRIMARY KEY (match_id, side, model)
);
CREATE INDEX match_models_model ON match_models (model);

-- A bot's profile, set by its owner (`ladder bot edit`, core::profile): a
-- short description, an author and a source link; NULL where unset.
ALTER TABLE bots ADD COLUMN description TEXT;
ALTER TABLE bots ADD COLUMN author TEXT;
ALTER TABLE bots ADD COLUMN source_url TEXT;

-- Bots' logs are kept for a while and within a quota per owner (core
-- limits: DEFAULT_LOG_RETENTION_DAYS, DEFAULT_MAX_LOG_BYTES_PER_OWNER): when
-- each row was kept and its size in bytes. Rows kept before this migration
-- date from their match's settlement.
ALTER TABLE match_logs ADD COLUMN kept_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE match_logs ADD COLUMN size_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE match_logs SET size_bytes = LENGTH(CAST(logs AS BLOB)),
    kept_ms = COALESCE((SELECT m.finished_ms FROM matches m WHERE m.id = match_logs.match_id), 0);
CREATE INDEX match_logs_owner_kept ON match_logs (owner_id, kept_ms);
CREATE INDEX match_logs_kept ON match_logs (kept_ms);
