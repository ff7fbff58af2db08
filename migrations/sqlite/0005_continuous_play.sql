-- Continuous ranked play (issue 14). An active bot stays in its class's
-- pairing waves match after match without being enqueued again:
--   active_stake      the stake of each of its matches; NULL: not active.
--   active_since      when its owner activated it.
--   active_ready_ms   when its last match settled or was voided (or it was
--                     activated): the wave re-queues it no sooner than the
--                     operator's match interval after that; NULL while one of
--                     its matches is open or while it is paused.
--   active_waves      waves it sat through unpaired since it was last ready
--                     (widens its rating window, like queue.waves_waited).
--   paused_reason     why the ladder paused it (its owner could not cover the
--                     stake); NULL unless paused. Activating again clears it.
ALTER TABLE bots ADD COLUMN active_stake BIGINT CHECK (active_stake IS NULL OR active_stake > 0);
ALTER TABLE bots ADD COLUMN active_since BIGINT;
ALTER TABLE bots ADD COLUMN active_ready_ms BIGINT;
ALTER TABLE bots ADD COLUMN active_waves BIGINT NOT NULL DEFAULT 0;
ALTER TABLE bots ADD COLUMN paused_reason TEXT;
CREATE INDEX bots_active ON bots (class, active_ready_ms);

-- The last pairing wave of each class, for `ladder status`.
CREATE TABLE waves (
    class TEXT PRIMARY KEY,
    season_id BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    pool BIGINT NOT NULL,
    pairs BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL
);
