-- Bots' logs of ranked matches, kept for their owners only (issue 12): the
-- published replay carries none, since logs can reveal strategy. One row per
-- side that logged anything; `logs` is JSON, a list of
-- {"round", "exchange", "lines", "truncated"} in match order.
CREATE TABLE match_logs (
    match_id TEXT NOT NULL,
    side TEXT NOT NULL CHECK (side IN ('a', 'b')),
    owner_id TEXT NOT NULL,
    logs TEXT NOT NULL,
    PRIMARY KEY (match_id, side)
);
