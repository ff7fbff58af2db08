-- The public ladder site (issue 14).
--
-- One row per bot per rated match, written by settlement beside the rating
-- change: the bot pages' rating charts (rating and RD after each match, the
-- version that played it, its season).
CREATE TABLE rating_history (
    bot_id TEXT NOT NULL,
    match_id TEXT NOT NULL,
    season_id BIGINT NOT NULL,
    version BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    rating DOUBLE PRECISION NOT NULL,
    deviation DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (bot_id, match_id)
);
-- Newest first by (at_ms, match_id): the chart's last points straight off the index.
CREATE INDEX rating_history_bot ON rating_history (bot_id, at_ms, match_id);

-- The site lists matches newest first with keyset pagination on
-- (finished_ms, id): settled matches overall, and each bot's. The bot
-- indexes also carry the opponent, the state and the winner, so a bot's
-- opponents and a head-to-head's score are read from the index alone
-- (docs/perf/site.md: 25 ms → 3 ms for a bot with 3,500 matches).
CREATE INDEX matches_finished ON matches (state, finished_ms, id);
CREATE INDEX matches_bot_a_finished ON matches (bot_a, finished_ms, id, bot_b, state, winner);
CREATE INDEX matches_bot_b_finished ON matches (bot_b, finished_ms, id, bot_a, state, winner);
-- The two above begin with the same columns.
DROP INDEX matches_bot_a;
DROP INDEX matches_bot_b;

-- Standings of one class of a season: running (ratings) and ended (standings).
-- The running table is walked best first by the conservative rating; the
-- expression must stay the one the site's query writes (store/site.rs,
-- CONSERVATIVE_SQL: rating − CONSERVATIVE_DEVIATIONS × deviation).
CREATE INDEX ratings_class ON ratings (season_id, class, (rating - 2.0 * deviation) DESC);
-- A bot's record over all its seasons (the primary key starts with the season).
CREATE INDEX ratings_bot ON ratings (bot_id);
CREATE INDEX standings_rank ON standings (season_id, class, rank);
