-- Settlement whose cost does not grow with the season (issue 49, item 0),
-- and ranked openings (item 1, at the end):
-- what the repeat rule and the pairing need is kept per key at settlement
-- and read by primary key, never found by scanning a pair's or a bot's history.
--
-- The rated match of each game of a season (repeat::play_key: both versions
-- and every exchange's actions): a later match with the same key repeats it
-- (repeat::verdict). One row per key, the first accepted where several were
-- rated before this table kept them.
CREATE TABLE season_plays (
    season_id BIGINT NOT NULL,
    play_key TEXT NOT NULL,
    match_id TEXT NOT NULL,
    accepted_ms BIGINT NOT NULL,
    PRIMARY KEY (season_id, play_key)
);
INSERT INTO season_plays (season_id, play_key, match_id, accepted_ms)
SELECT season_id, play_key, id, accepted_ms FROM (
    SELECT season_id, play_key, id, accepted_ms,
        ROW_NUMBER() OVER (PARTITION BY season_id, play_key ORDER BY accepted_ms, id) AS n
    FROM matches
    WHERE state = 'settled' AND not_rated IS NULL AND play_key IS NOT NULL
) rated
WHERE n = 1;

-- How many of a season's settled matches between two versions
-- (repeat::pair_key) repeated a rated one: acceptance reads whether the pair
-- already repeated here (pair_meetings.repeated) instead of searching the
-- pair's matches.
CREATE TABLE version_pairs (
    season_id BIGINT NOT NULL,
    pair_key TEXT NOT NULL,
    repeats BIGINT NOT NULL,
    PRIMARY KEY (season_id, pair_key)
);
INSERT INTO version_pairs (season_id, pair_key, repeats)
SELECT season_id, pair_key, COUNT(*) FROM matches
WHERE state = 'settled' AND not_rated = 'repeat' AND pair_key IS NOT NULL
GROUP BY season_id, pair_key;

-- A bot's open matches (queued or running), one side at a time: settlement
-- and activation ask whether a bot has another, which the bot_a/bot_b
-- indexes answered by walking every match the bot ever played. Covering
-- (state and id), so that SQLite's planner prefers them to the site's
-- covering indexes of the same bot.
CREATE INDEX matches_open_bot_a ON matches (bot_a, state, id) WHERE state IN ('queued', 'running');
CREATE INDEX matches_open_bot_b ON matches (bot_b, state, id) WHERE state IN ('queued', 'running');

-- Ranked matches open with exchanges forced for both fighters, drawn from the
-- match's seed (duel_ladder_core::limits::RANKED_OPENING_EXCHANGES, pinned
-- here at acceptance so a match run again plays the same opening): without
-- them two deterministic bots play one game however often they meet
-- (docs/RULES.md). Matches accepted before this migration had none.
ALTER TABLE matches ADD COLUMN opening_exchanges BIGINT NOT NULL DEFAULT 0;
