-- The standings by model (issue 32, what a win cost), kept at settlement
-- (settle::record_usage) by season, class, model and bot, so that the cost
-- page reads a few rows per model instead of joining every settled match of
-- the class to `match_models`: sides of settled matches that called the
-- model and their wins and draws, its calls and tokens, dollars over the
-- priced sides, sides with no price, and wins among the priced sides.
CREATE TABLE model_spend (
    season_id BIGINT NOT NULL REFERENCES seasons (id),
    class TEXT NOT NULL,
    model TEXT NOT NULL,
    bot_id TEXT NOT NULL REFERENCES bots (id),
    matches BIGINT NOT NULL,
    wins BIGINT NOT NULL,
    draws BIGINT NOT NULL,
    calls BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    cost_usd DOUBLE PRECISION NOT NULL,
    unpriced BIGINT NOT NULL,
    priced_wins BIGINT NOT NULL,
    PRIMARY KEY (season_id, class, model, bot_id)
);
-- What was settled before this migration.
INSERT INTO model_spend (season_id, class, model, bot_id, matches, wins, draws, calls, tokens,
    cost_usd, unpriced, priced_wins)
SELECT m.season_id, m.class, mm.model,
    CASE WHEN mm.side = 'a' THEN m.bot_a ELSE m.bot_b END,
    COUNT(*),
    SUM(CASE WHEN m.winner = mm.side THEN 1 ELSE 0 END),
    SUM(CASE WHEN m.winner = 'draw' THEN 1 ELSE 0 END),
    SUM(mm.calls), SUM(mm.tokens), COALESCE(SUM(mm.cost_usd), 0.0),
    SUM(CASE WHEN mm.cost_usd IS NULL THEN 1 ELSE 0 END),
    SUM(CASE WHEN mm.cost_usd IS NOT NULL AND m.winner = mm.side THEN 1 ELSE 0 END)
FROM match_models mm JOIN matches m ON m.id = mm.match_id
WHERE m.state = 'settled'
GROUP BY m.season_id, m.class, mm.model, CASE WHEN mm.side = 'a' THEN m.bot_a ELSE m.bot_b END;
