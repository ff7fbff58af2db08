-- Owner quotas of `ladder serve`: the milliseconds an owner's uploads spent
-- compiling, per UTC day (`day` = milliseconds since the epoch / 86 400 000).
-- Versions and stored bytes are counted from bots, bot_versions and wasm_blobs;
-- the indexes keep those counts to one owner's rows.
CREATE TABLE compile_usage (
    owner_id TEXT NOT NULL REFERENCES users (id),
    day BIGINT NOT NULL,
    compile_ms BIGINT NOT NULL,
    PRIMARY KEY (owner_id, day)
);
CREATE INDEX bots_owner ON bots (owner_id);
CREATE INDEX bot_versions_digest ON bot_versions (digest);
