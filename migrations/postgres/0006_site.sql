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
CREATE INDEX rating_history_bot ON rating_history (bot_id, at_ms);

-- The site lists matches newest first with keyset pagination on
-- (finished_ms, id): settled matches overall, and each bot's.
CREATE INDEX matches_finished ON matches (state, finished_ms, id);
CREATE INDEX matches_bot_a_finished ON matches (bot_a, finished_ms, id);
CREATE INDEX matches_bot_b_finished ON matches (bot_b, finished_ms, id);
-- The two above begin with the same columns.
DROP INDEX matches_bot_a;
DROP INDEX matches_bot_b;

-- Standings of one class of a season: running (ratings) and ended (standings).
CREATE INDEX ratings_class ON ratings (season_id, class);
CREATE INDEX standings_rank ON standings (season_id, class, rank);
