-- Standings: one fit of the season (issue 32; docs/RULES.md). Each bot's
-- rating and deviation when its season began, the prior of the fit over the
-- season's rated games (duel_ladder_core::rating::season_fit): the soft reset
-- of its last frozen standing, or the initial 1500 ± 350.
ALTER TABLE ratings ADD COLUMN start_rating DOUBLE PRECISION NOT NULL DEFAULT 1500;
ALTER TABLE ratings ADD COLUMN start_deviation DOUBLE PRECISION NOT NULL DEFAULT 350;
-- Rows made before this migration: their start as ensure_rating computed it
-- (Rating::soft_reset: keep half the distance from 1500, deviation within
-- 150..350).
UPDATE ratings SET
    start_rating = 1500 + 0.5 * (s.rating - 1500),
    start_deviation = MIN(MAX(s.deviation, 150), 350)
FROM standings s
WHERE s.bot_id = ratings.bot_id
  AND s.season_id = (
      SELECT MAX(p.season_id) FROM standings p
      WHERE p.bot_id = ratings.bot_id AND p.season_id < ratings.season_id
  );
