//! SplitMix64, the tests' reproducible random numbers: the referee's built-in
//! bots' own generator (`duel-builtin`, over the rules alone), so a property
//! test's seed replays the same run it always did without the store's tests
//! depending on the referee.

pub use duel_builtin::SplitMix64;
