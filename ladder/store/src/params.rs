//! Optional filters bound after a statement's fixed parameters: only the
//! filters given are written into its SQL, each with the placeholder
//! [`Params::placeholder`] numbers for it. Written as `$n = '' OR column =
//! $n` instead, an absent filter leaves PostgreSQL's generic plan (what a
//! prepared statement runs from its sixth execution) unable to use an
//! index's order: it read all of a bot's matches and sorted them
//! (docs/perf/site.md, "generic plans").

use sqlx::Any;
use sqlx::any::AnyArguments;
use sqlx::query::Query;

/// The values of the filters given, in the order of their placeholders.
pub(crate) struct Params {
    fixed: usize,
    values: Vec<String>,
}

impl Params {
    /// Placeholders after the statement's `fixed` ones (`$1` … `$fixed`).
    pub(crate) fn after(fixed: usize) -> Params {
        Params {
            fixed,
            values: Vec::new(),
        }
    }

    /// Keeps `value` and names its placeholder, for the SQL.
    pub(crate) fn placeholder(&mut self, value: &str) -> String {
        self.values.push(value.to_owned());
        format!("${}", self.fixed + self.values.len())
    }

    /// `query`, its fixed parameters bound, with the filters' values bound.
    pub(crate) fn bind(self, query: Query<'_, Any, AnyArguments>) -> Query<'_, Any, AnyArguments> {
        self.values
            .into_iter()
            .fold(query, |query, value| query.bind(value))
    }
}
