-- The ladder schema on PostgreSQL. Times are Unix milliseconds; flags are 0/1 integers
-- so both backends read them the same way.

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'operator')),
    token_hash TEXT NOT NULL UNIQUE,
    created_ms BIGINT NOT NULL
);

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO settings (key, value) VALUES ('rake_bp', 500);

CREATE TABLE classes (
    name TEXT PRIMARY KEY,
    open BIGINT NOT NULL
);
INSERT INTO classes (name, open) VALUES ('light', 1), ('middle', 1), ('heavy', 1);

CREATE TABLE ledger_accounts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('owner', 'escrow', 'house', 'issuance')),
    may_go_negative BIGINT NOT NULL DEFAULT 0,
    debits_pending BIGINT NOT NULL DEFAULT 0,
    debits_posted BIGINT NOT NULL DEFAULT 0,
    credits_pending BIGINT NOT NULL DEFAULT 0,
    credits_posted BIGINT NOT NULL DEFAULT 0,
    CHECK (may_go_negative = 1 OR credits_posted - debits_posted - debits_pending >= 0)
);
INSERT INTO ledger_accounts (id, kind, may_go_negative) VALUES ('house', 'house', 0), ('issuance', 'issuance', 1);

CREATE TABLE transfers (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('single', 'pending', 'post', 'void')),
    debit_account TEXT NOT NULL REFERENCES ledger_accounts (id),
    credit_account TEXT NOT NULL REFERENCES ledger_accounts (id),
    amount BIGINT NOT NULL CHECK (amount > 0),
    pending_id TEXT REFERENCES transfers (id),
    memo TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
-- A pending transfer is posted or voided at most once.
CREATE UNIQUE INDEX transfers_resolve_once ON transfers (pending_id) WHERE pending_id IS NOT NULL;

CREATE TABLE bots (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users (id),
    name TEXT NOT NULL UNIQUE,
    class TEXT NOT NULL,
    current_version BIGINT NOT NULL,
    last_opponent TEXT,
    created_ms BIGINT NOT NULL
);

CREATE TABLE bot_versions (
    bot_id TEXT NOT NULL REFERENCES bots (id),
    version BIGINT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('builtin', 'wasm', 'endpoint')),
    spec TEXT NOT NULL,
    digest TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (bot_id, version)
);

CREATE TABLE wasm_blobs (
    digest TEXT PRIMARY KEY,
    bytes BYTEA NOT NULL,
    size_bytes BIGINT NOT NULL
);

CREATE TABLE seasons (
    id BIGINT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    started_ms BIGINT NOT NULL,
    ended_ms BIGINT
);

CREATE TABLE ratings (
    season_id BIGINT NOT NULL REFERENCES seasons (id),
    bot_id TEXT NOT NULL REFERENCES bots (id),
    class TEXT NOT NULL,
    rating DOUBLE PRECISION NOT NULL,
    deviation DOUBLE PRECISION NOT NULL,
    volatility DOUBLE PRECISION NOT NULL,
    games BIGINT NOT NULL DEFAULT 0,
    wins BIGINT NOT NULL DEFAULT 0,
    losses BIGINT NOT NULL DEFAULT 0,
    draws BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (season_id, bot_id)
);

-- Written once when a season ends; never updated.
CREATE TABLE standings (
    season_id BIGINT NOT NULL REFERENCES seasons (id),
    bot_id TEXT NOT NULL,
    class TEXT NOT NULL,
    rank BIGINT NOT NULL,
    bot_name TEXT NOT NULL,
    owner_name TEXT NOT NULL,
    rating DOUBLE PRECISION NOT NULL,
    deviation DOUBLE PRECISION NOT NULL,
    volatility DOUBLE PRECISION NOT NULL,
    conservative DOUBLE PRECISION NOT NULL,
    provisional BIGINT NOT NULL,
    games BIGINT NOT NULL,
    wins BIGINT NOT NULL,
    losses BIGINT NOT NULL,
    draws BIGINT NOT NULL,
    PRIMARY KEY (season_id, bot_id)
);

CREATE TABLE queue (
    bot_id TEXT PRIMARY KEY REFERENCES bots (id),
    owner_id TEXT NOT NULL,
    class TEXT NOT NULL,
    stake BIGINT NOT NULL CHECK (stake > 0),
    enqueued_ms BIGINT NOT NULL,
    waves_waited BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX queue_class ON queue (class);

CREATE TABLE matches (
    id TEXT PRIMARY KEY,
    season_id BIGINT NOT NULL,
    class TEXT NOT NULL,
    ruleset TEXT NOT NULL,
    budget BIGINT NOT NULL,
    seed BIGINT NOT NULL,
    bot_a TEXT NOT NULL,
    version_a BIGINT NOT NULL,
    owner_a TEXT NOT NULL,
    stake_a BIGINT NOT NULL,
    bot_b TEXT NOT NULL,
    version_b BIGINT NOT NULL,
    owner_b TEXT NOT NULL,
    stake_b BIGINT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'settled', 'voided')),
    attempts BIGINT NOT NULL DEFAULT 0,
    lease_id TEXT,
    lease_expires_ms BIGINT,
    accepted_ms BIGINT NOT NULL,
    finished_ms BIGINT,
    winner TEXT,
    replay_path TEXT,
    note TEXT
);
CREATE INDEX matches_claimable ON matches (state, accepted_ms);
CREATE INDEX matches_bot_a ON matches (bot_a);
CREATE INDEX matches_bot_b ON matches (bot_b);
