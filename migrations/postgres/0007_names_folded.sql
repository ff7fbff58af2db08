-- Account and bot names are unique whatever their letter case: `Alice` beside
-- `alice`, or `B-wasm` beside `b-wasm`, would let one owner pass for another
-- on the site and on Duel TV. Names are ASCII (model::check_name), so lower()
-- folds them the same way on both backends.
CREATE UNIQUE INDEX users_name_folded ON users (lower(name));
CREATE UNIQUE INDEX bots_name_folded ON bots (lower(name));
