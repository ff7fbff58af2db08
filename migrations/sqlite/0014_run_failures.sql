-- Why the last run of a match failed, as its owners may read it (issue 47):
-- a worker whose run ends in an error (its replay could not be published,
-- say) records the cause here, one bounded line without server paths
-- (duel_ladder_core::failure::public_cause), before the match is run again
-- after its lease; a void after the last run names it in its note. NULL
-- while no run failed, or when the worker died without a word.
ALTER TABLE matches ADD COLUMN last_failure TEXT;
