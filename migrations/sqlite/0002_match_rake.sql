-- The rake is pinned on the match row at acceptance, as the ruleset, class and
-- budget are: an operator's rake change applies to matches accepted after it,
-- never to matches already queued or running. Matches accepted before this
-- migration keep the rake in force when it runs.
ALTER TABLE matches ADD COLUMN rake_bp BIGINT NOT NULL DEFAULT 500;
UPDATE matches SET rake_bp = COALESCE((SELECT value FROM settings WHERE key = 'rake_bp'), 500);
