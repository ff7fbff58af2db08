-- Pairings that produce information (docs/RULES.md, "Pairings"): whether the
-- pair's versions had already repeated a game this season when it was last
-- accepted (1) or not (0). Acceptance sets it and marks the meeting in both
-- bots' recent_opponents (matchmaker::REPEATED_MARK), which is what the wave
-- reads: such a pair meets only when no partner that would play a new game
-- is within reach, since its next game would most likely be the same game
-- again, which settles stakes but tells the ratings nothing.
ALTER TABLE pair_meetings ADD COLUMN repeated BIGINT NOT NULL DEFAULT 0;
-- Pairs that met before this migration read 0 until they meet again: a
-- backfill would scan every match at start-up for a column the wave never reads.
