//! The one error type of the arena: a tournament, gauntlet or SPRT that
//! cannot be set up or resumed as asked, or a match of it that cannot be
//! built. The `referee` binary reports it with its exit code.

#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    /// A match of the arena could not be built or played.
    #[error(transparent)]
    Match(#[from] duel_match::MatchError),
    /// The arena asked for cannot be played as given: an entrant, an opening
    /// book, a results folder to create or resume. One line.
    #[error("{0}")]
    Setup(String),
    /// A replay of the arena could not be written.
    #[error(transparent)]
    Replay(#[from] duel_replays::ReplayError),
    /// An async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}
