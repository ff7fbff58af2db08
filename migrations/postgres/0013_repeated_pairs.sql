-- Pairings that produce information (docs/RULES.md, "Pairings"): whether the
-- pair's versions had already repeated a game this season when it was last
-- accepted (1) or not (0). Acceptance sets it and marks the meeting in both
-- bots' recent_opponents (matchmaker::REPEATED_MARK), which is what the wave
-- reads: such a pair meets only when no partner that would play a new game
-- is within reach, since its next game would most likely be the same game
-- again, which settles stakes but tells the ratings nothing.
ALTER TABLE pair_meetings ADD COLUMN repeated BIGINT NOT NULL DEFAULT 0;
-- Pairs that met before this migration: repeated if any of their games this
-- season was a repeat.
UPDATE pair_meetings SET repeated = 1 WHERE EXISTS (
    SELECT 1 FROM matches m
    WHERE m.season_id = pair_meetings.season_id AND m.not_rated = 'repeat'
      AND ((m.bot_a = pair_meetings.bot_low AND m.bot_b = pair_meetings.bot_high)
        OR (m.bot_a = pair_meetings.bot_high AND m.bot_b = pair_meetings.bot_low)));
