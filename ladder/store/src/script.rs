//! Statements that go to the database together: on SQLite as one command,
//! so a whole step (a settlement's reads, or all its writes) costs one hop to
//! sqlx's connection thread and one answer back instead of one pair per
//! statement; on PostgreSQL, which prepares one statement per command, one
//! after another. Each statement is written with its own `$1`, `$2`, …; the
//! script renumbers them when it joins statements into one command.

use futures::TryStreamExt;
use sqlx::AnyConnection;
use sqlx::Either;
use sqlx::any::AnyRow;

use crate::error::{LadderError, Result};

/// A value bound to a statement.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<i64> for Arg {
    fn from(value: i64) -> Arg {
        Arg::Int(value)
    }
}

impl From<f64> for Arg {
    fn from(value: f64) -> Arg {
        Arg::Real(value)
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Arg {
        Arg::Text(value)
    }
}

impl From<&str> for Arg {
    fn from(value: &str) -> Arg {
        Arg::Text(value.to_owned())
    }
}

/// One statement of a script, with what it must change.
#[derive(Debug)]
struct Statement {
    sql: String,
    args: Vec<Arg>,
    /// Rows it must change (`rows affected`), and the table named when it
    /// changes another number.
    expect: Option<(u64, &'static str)>,
}

/// What one statement gave back.
#[derive(Default)]
pub(crate) struct Answer {
    pub rows: Vec<AnyRow>,
    /// Rows an `INSERT`, `UPDATE` or `DELETE` changed. Meaningless for a
    /// `SELECT`: SQLite reports the last write's count there.
    pub affected: u64,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("rows", &self.rows.len())
            .field("affected", &self.affected)
            .finish()
    }
}

/// Statements to run in order, on one connection.
#[derive(Debug, Default)]
pub(crate) struct Script {
    statements: Vec<Statement>,
}

impl Script {
    /// Adds a statement; its answer comes back at this index.
    pub fn push(&mut self, sql: String, args: Vec<Arg>) -> usize {
        self.statements.push(Statement {
            sql,
            args,
            expect: None,
        });
        self.statements.len() - 1
    }

    /// Adds a statement that must change exactly `rows` rows of `table`:
    /// any other count fails the script (and so rolls back its transaction).
    pub fn push_expecting(
        &mut self,
        sql: String,
        args: Vec<Arg>,
        rows: usize,
        table: &'static str,
    ) -> usize {
        let index = self.push(sql, args);
        self.statements[index].expect = Some((rows as u64, table));
        index
    }

    /// Runs every statement in order: as one command when `together`, or one
    /// by one, stopping at the first that fails or changes the wrong number of
    /// rows. On failure, statements before it may have run: run scripts that
    /// write inside a transaction.
    pub async fn run(self, conn: &mut AnyConnection, together: bool) -> Result<Vec<Answer>> {
        if together && self.statements.len() > 1 {
            let mut sql = String::new();
            let mut args = Vec::new();
            for statement in &self.statements {
                sql.push_str(&shift_placeholders(&statement.sql, args.len()));
                sql.push_str(";\n");
                args.extend(statement.args.iter().cloned());
            }
            let answers = command(conn, sql, args, self.statements.len()).await?;
            for (statement, answer) in self.statements.iter().zip(&answers) {
                check(statement, answer)?;
            }
            return Ok(answers);
        }
        let mut answers = Vec::with_capacity(self.statements.len());
        for mut statement in self.statements {
            let args = std::mem::take(&mut statement.args);
            let sql = std::mem::take(&mut statement.sql);
            let answer = command(conn, sql, args, 1).await?.pop().unwrap_or_default();
            check(&statement, &answer)?;
            answers.push(answer);
        }
        Ok(answers)
    }
}

impl Script {
    /// The whole script as one statement, for PostgreSQL (which runs one
    /// statement per command): each statement a data-modifying `WITH` query
    /// (`w0 AS (… RETURNING 1)`), the main query counting each one's rows.
    /// A settlement batch's writes then cost one round trip instead of one
    /// each. Every part sees the rows as they were when the statement began,
    /// so no statement of such a script may read what another writes or
    /// change a row another changes; each must be an `INSERT`, `UPDATE` or
    /// `DELETE` without a `RETURNING` of its own.
    pub async fn run_as_one_statement(self, conn: &mut AnyConnection) -> Result<Vec<Answer>> {
        if self.statements.len() < 2 {
            return self.run(conn, false).await;
        }
        let mut sql = String::from("WITH ");
        let mut args = Vec::new();
        let mut counts = Vec::with_capacity(self.statements.len());
        for (index, statement) in self.statements.iter().enumerate() {
            if index > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "w{index} AS ({} RETURNING 1)",
                shift_placeholders(&statement.sql, args.len())
            ));
            args.extend(statement.args.iter().cloned());
            counts.push(format!("(SELECT count(*) FROM w{index}) AS n{index}"));
        }
        sql.push_str(" SELECT ");
        sql.push_str(&counts.join(", "));
        let answer = command(conn, sql, args, 1).await?.pop().unwrap_or_default();
        let Some(row) = answer.rows.first() else {
            return Err(LadderError::corrupt("a write script gave no counts"));
        };
        let mut answers = Vec::with_capacity(self.statements.len());
        for (index, statement) in self.statements.iter().enumerate() {
            let changed: i64 = sqlx::Row::try_get(row, format!("n{index}").as_str())?;
            let answer = Answer {
                rows: Vec::new(),
                affected: u64::try_from(changed).unwrap_or(0),
            };
            check(statement, &answer)?;
            answers.push(answer);
        }
        Ok(answers)
    }
}

/// Sends `sql` (`statements` statements) as one command and collects each
/// statement's answer: `Executor::fetch_many` yields a statement's rows, then
/// its result.
async fn command(
    conn: &mut AnyConnection,
    sql: String,
    args: Vec<Arg>,
    statements: usize,
) -> Result<Vec<Answer>> {
    let query = bind_all(sqlx::query(sqlx::AssertSqlSafe(sql)), args);
    let mut answers = Vec::with_capacity(statements);
    let mut current = Answer::default();
    let mut stream = sqlx::Executor::fetch_many(&mut *conn, query);
    while let Some(item) = stream.try_next().await? {
        match item {
            Either::Right(row) => current.rows.push(row),
            Either::Left(done) => {
                current.affected = done.rows_affected();
                answers.push(std::mem::take(&mut current));
            }
        }
    }
    if answers.len() != statements {
        return Err(LadderError::corrupt(format!(
            "a command of {statements} statements gave {} answers",
            answers.len()
        )));
    }
    Ok(answers)
}

fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    args: Vec<Arg>,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    for arg in args {
        query = match arg {
            Arg::Int(value) => query.bind(value),
            Arg::Real(value) => query.bind(value),
            Arg::Text(value) => query.bind(value),
        };
    }
    query
}

/// A batched write that changed other than every row it meant to: the
/// transaction is rolled back and its caller falls back (a settlement batch
/// settles each match alone, which names the cause).
fn check(statement: &Statement, answer: &Answer) -> Result<()> {
    match statement.expect {
        Some((rows, table)) if answer.affected != rows => Err(LadderError::Invalid(format!(
            "batched settlement wrote {} of {rows} {table} rows",
            answer.affected
        ))),
        _ => Ok(()),
    }
}

/// `(first, …), (…)`: `rows` tuples of `columns` placeholders numbered from `$1`.
pub(crate) fn placeholder_rows(rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|row| {
            let cells: Vec<String> = (1..=columns)
                .map(|column| format!("${}", row * columns + column))
                .collect();
            format!("({})", cells.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `sql` with every `$N` placeholder outside quotes renumbered `$N+offset`.
pub(crate) fn shift_placeholders(sql: &str, offset: usize) -> String {
    if offset == 0 {
        return sql.to_owned();
    }
    let mut shifted = String::with_capacity(sql.len() + 16);
    let mut chars = sql.char_indices().peekable();
    let mut quoted = false;
    while let Some((_, c)) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        let starts_number = matches!(chars.peek(), Some((_, next)) if next.is_ascii_digit());
        if c == '$' && !quoted && starts_number {
            let mut number = 0usize;
            while let Some(&(_, digit)) = chars.peek() {
                let Some(value) = digit.to_digit(10) else {
                    break;
                };
                number = number * 10 + value as usize;
                chars.next();
            }
            shifted.push('$');
            shifted.push_str(&(number + offset).to_string());
        } else {
            shifted.push(c);
        }
    }
    shifted
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::{Connection, Row};

    /// A fresh in-memory SQLite database holding the table `create` makes.
    async fn memory_db(create: &'static str) -> AnyConnection {
        sqlx::any::install_default_drivers();
        let mut conn = AnyConnection::connect("sqlite::memory:")
            .await
            .expect("sqlite");
        sqlx::raw_sql(create)
            .execute(&mut conn)
            .await
            .expect("table");
        conn
    }

    /// The same script on SQLite, as one command and one statement at a
    /// time: the same answers, statement by statement.
    #[tokio::test]
    async fn together_and_one_by_one_answer_alike() {
        let mut answers = Vec::new();
        for together in [true, false] {
            let mut conn =
                memory_db("CREATE TABLE t (id TEXT PRIMARY KEY, n BIGINT NOT NULL)").await;
            let mut script = Script::default();
            script.push_expecting(
                "INSERT INTO t (id, n) VALUES ($1, $2), ($3, $4)".to_owned(),
                vec![Arg::from("a"), Arg::from(1), Arg::from("b"), Arg::from(2)],
                2,
                "t",
            );
            script.push(
                "UPDATE t SET n = n + $1 WHERE id = $2 RETURNING n".to_owned(),
                vec![Arg::from(40), Arg::from("b")],
            );
            script.push(
                "SELECT id, n FROM t WHERE n > $1 ORDER BY id".to_owned(),
                vec![Arg::from(0)],
            );
            let ran = script.run(&mut conn, together).await.expect("script");
            // The writes' counts, and every statement's rows.
            let summary: Vec<(u64, Vec<i64>)> = ran
                .iter()
                .zip([true, true, false])
                .map(|(answer, writes)| {
                    let numbers = answer
                        .rows
                        .iter()
                        .map(|row| row.try_get::<i64, _>("n").expect("n"))
                        .collect();
                    (if writes { answer.affected } else { 0 }, numbers)
                })
                .collect();
            answers.push(summary);
        }
        assert_eq!(
            answers[0],
            vec![(2, vec![]), (1, vec![42]), (0, vec![1, 42])]
        );
        assert_eq!(answers[0], answers[1]);
    }

    /// A statement that changes the wrong number of rows fails the script,
    /// run either way.
    #[tokio::test]
    async fn a_wrong_row_count_fails_the_script() {
        for together in [true, false] {
            let mut conn = memory_db("CREATE TABLE t (id TEXT PRIMARY KEY)").await;
            let mut script = Script::default();
            script.push(
                "INSERT INTO t (id) VALUES ($1)".to_owned(),
                vec![Arg::from("a")],
            );
            script.push_expecting(
                "UPDATE t SET id = $1 WHERE id = $2".to_owned(),
                vec![Arg::from("c"), Arg::from("missing")],
                1,
                "t",
            );
            let error = script
                .run(&mut conn, together)
                .await
                .expect_err("0 of 1 rows");
            assert!(
                error.to_string().contains("wrote 0 of 1 t rows"),
                "together {together}: {error}"
            );
        }
    }

    #[test]
    fn placeholders_shift_outside_quotes_only() {
        let table = [
            ("SELECT $1", 0, "SELECT $1"),
            ("SELECT $1, $2", 3, "SELECT $4, $5"),
            ("VALUES ($9, $10), ($11)", 2, "VALUES ($11, $12), ($13)"),
            ("SELECT '$1', $1", 5, "SELECT '$1', $6"),
            ("SELECT 'it''s $2', $2", 1, "SELECT 'it''s $2', $3"),
            ("SELECT $ || $a", 4, "SELECT $ || $a"),
            ("x = $1;", 99, "x = $100;"),
        ];
        for (sql, offset, want) in table {
            assert_eq!(shift_placeholders(sql, offset), want, "{sql} + {offset}");
        }
    }
}
