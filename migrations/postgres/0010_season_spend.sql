-- Each bot's spend over a season's settled matches (issue 32, what a win
-- cost), kept in its ratings row at settlement (settle::record_spend) so that
-- the cost page reads one row per bot instead of summing every match:
-- settled matches (rated or not) and their W/D/L, model tokens, dollars over
-- the priced matches, matches with an unpriced call, wins among the priced
-- matches, decisions asked (one per exchange), and decisions lost to the
-- fallback by cause.
ALTER TABLE ratings ADD COLUMN settled BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN settled_wins BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN settled_draws BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN settled_losses BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN unpriced BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN priced_wins BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN decisions BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN fallback_timeout BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN fallback_budget BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN fallback_fault BIGINT NOT NULL DEFAULT 0;
-- What was settled before this migration.
UPDATE ratings SET settled = s.settled, settled_wins = s.wins, settled_draws = s.draws,
    settled_losses = s.losses, tokens = s.tokens, cost_usd = s.cost, unpriced = s.unpriced,
    priced_wins = s.priced_wins, decisions = s.decisions
FROM (
    SELECT season_id, bot, COUNT(*) AS settled, SUM(won) AS wins, SUM(drawn) AS draws,
        SUM(lost) AS losses, SUM(tokens) AS tokens, COALESCE(SUM(cost), 0.0) AS cost,
        SUM(CASE WHEN cost IS NULL THEN 1 ELSE 0 END) AS unpriced,
        SUM(CASE WHEN cost IS NULL THEN 0 ELSE won END) AS priced_wins,
        SUM(decisions) AS decisions
    FROM (
        SELECT m.season_id, m.bot_a AS bot,
            CASE WHEN m.winner = 'a' THEN 1 ELSE 0 END AS won,
            CASE WHEN m.winner = 'draw' THEN 1 ELSE 0 END AS drawn,
            CASE WHEN m.winner = 'b' THEN 1 ELSE 0 END AS lost,
            COALESCE(m.tokens_a, 0) AS tokens, m.cost_usd_a AS cost,
            COALESCE(m.exchanges, 0) AS decisions
        FROM matches m WHERE m.state = 'settled'
        UNION ALL
        SELECT m.season_id, m.bot_b AS bot,
            CASE WHEN m.winner = 'b' THEN 1 ELSE 0 END AS won,
            CASE WHEN m.winner = 'draw' THEN 1 ELSE 0 END AS drawn,
            CASE WHEN m.winner = 'a' THEN 1 ELSE 0 END AS lost,
            COALESCE(m.tokens_b, 0) AS tokens, m.cost_usd_b AS cost,
            COALESCE(m.exchanges, 0) AS decisions
        FROM matches m WHERE m.state = 'settled'
    ) sides
    GROUP BY season_id, bot
) s
WHERE ratings.season_id = s.season_id AND ratings.bot_id = s.bot;
UPDATE ratings SET fallback_timeout = f.f_timeout, fallback_budget = f.f_budget,
    fallback_fault = f.f_fault
FROM (
    SELECT m.season_id, CASE WHEN f.side = 'a' THEN m.bot_a ELSE m.bot_b END AS bot,
        SUM(f.timeout) AS f_timeout, SUM(f.budget) AS f_budget, SUM(f.fault) AS f_fault
    FROM match_fallbacks f JOIN matches m ON m.id = f.match_id
    WHERE m.state = 'settled'
    GROUP BY m.season_id, CASE WHEN f.side = 'a' THEN m.bot_a ELSE m.bot_b END
) f
WHERE ratings.season_id = f.season_id AND ratings.bot_id = f.bot;
