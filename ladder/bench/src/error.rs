//! The one error type of the ladder's benchmarks: the service's (and through
//! it the store's) beside what only a benchmark does: seeding a database in
//! SQL, joining its tasks, building its HTTP client. Causes of other crates
//! are kept as sources, their words at the end of the message.

use duel_ladder::{LadderError, ServiceError};

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// What the ladder refused or failed with.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// A flag out of range, or a database the benchmark cannot use as it is.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A read of the benchmark's own SQL (the seed's, the load's targets).
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    /// One step of `bench-site seed`'s SQL.
    #[error("seeding {step}: {source}")]
    Seeding {
        step: &'static str,
        #[source]
        source: sqlx::Error,
    },
    /// A rated game settled while the seed fitted its season.
    #[error("seeding season fit: the games changed under it")]
    FitChanged,
    /// A task of the benchmark ended without its answer (it panicked).
    #[error("{task}: {source}")]
    Task {
        task: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
    #[error("cannot build an HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    #[error("invalid argument: cannot encode a query: {0}")]
    Query(#[source] serde_urlencoded::ser::Error),
}

impl From<LadderError> for BenchError {
    fn from(error: LadderError) -> BenchError {
        BenchError::Service(error.into())
    }
}

impl From<duel_replays::ReplayError> for BenchError {
    fn from(error: duel_replays::ReplayError) -> BenchError {
        BenchError::Service(error.into())
    }
}

impl From<sqlx::Error> for BenchError {
    fn from(error: sqlx::Error) -> BenchError {
        BenchError::Database(error)
    }
}

pub type Result<T, E = BenchError> = std::result::Result<T, E>;
