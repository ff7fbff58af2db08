-- Transcripts kept within limits (issue 33 item 8): one row per side of a
-- match whose bot called a model and whose part of the match's transcript
-- (kept in the replay store, under the match id) is still kept. `size_bytes`
-- is that side's part as JSON; it counts against `owner_id`'s quota.
-- Retention and the quota drop rows and rewrite or drop the stored
-- transcript (store::transcripts).
CREATE TABLE match_transcripts (
    match_id TEXT NOT NULL,
    side TEXT NOT NULL CHECK (side IN ('a', 'b')),
    owner_id TEXT NOT NULL,
    kept_ms BIGINT NOT NULL,
    size_bytes BIGINT NOT NULL,
    PRIMARY KEY (match_id, side)
);
CREATE INDEX match_transcripts_owner_kept ON match_transcripts (owner_id, kept_ms);
CREATE INDEX match_transcripts_kept ON match_transcripts (kept_ms);
-- Transcripts kept before this migration: every side that called a model
-- (match_models), as kept when its match finished, of unknown size (0), so
-- the retention drops them in time; the quota counts only later ones.
INSERT INTO match_transcripts (match_id, side, owner_id, kept_ms, size_bytes)
SELECT DISTINCT mm.match_id, mm.side,
    CASE WHEN mm.side = 'a' THEN m.owner_a ELSE m.owner_b END,
    COALESCE(m.finished_ms, 0), 0
FROM match_models mm JOIN matches m ON m.id = mm.match_id;
