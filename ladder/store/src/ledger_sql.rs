//! The stakes ledger in SQL: applying one transfer inside a caller's
//! transaction, balances, and loading the history for `ledger check`.

use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::script::{Arg, Script, placeholder_rows};
use super::{Store, get, write_tx};
use crate::error::{LadderError, Result};
use duel_ladder_core::ledger::{
    self, Account, Delta, LedgerReport, LedgerViolation, StakedMatch, Transfer, TransferKind,
    TransferOp, TransferOutcome, TransferRequest,
};
use duel_ladder_core::model::{MatchState, winner_from_name};

fn transfer_from_row(row: &AnyRow) -> Result<Transfer> {
    Ok(Transfer {
        id: get(row, "id")?,
        kind: TransferKind::from_name(&get::<String>(row, "kind")?)?,
        debit: get(row, "debit_account")?,
        credit: get(row, "credit_account")?,
        amount: get(row, "amount")?,
        pending_id: get(row, "pending_id")?,
        memo: get(row, "memo")?,
        created_ms: get(row, "created_ms")?,
    })
}

fn account_from_row(row: &AnyRow) -> Result<Account> {
    Ok(Account {
        id: get(row, "id")?,
        kind: get(row, "kind")?,
        may_go_negative: get::<i64>(row, "may_go_negative")? != 0,
        debits_pending: get(row, "debits_pending")?,
        debits_posted: get(row, "debits_posted")?,
        credits_pending: get(row, "credits_pending")?,
        credits_posted: get(row, "credits_posted")?,
    })
}

const TRANSFER_COLUMNS: &str =
    "id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms";

pub(crate) async fn load_transfer(conn: &mut AnyConnection, id: &str) -> Result<Option<Transfer>> {
    let row = sqlx::query(
        "SELECT id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms FROM transfers WHERE id = $1",
    )
    .bind(id.to_owned())
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(transfer_from_row).transpose()
}

pub(crate) async fn create_account(conn: &mut AnyConnection, id: &str, kind: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO ledger_accounts (id, kind) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
    )
    .bind(id.to_owned())
    .bind(kind.to_owned())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

pub(crate) async fn load_account(conn: &mut AnyConnection, id: &str) -> Result<Option<Account>> {
    let row = sqlx::query("SELECT * FROM ledger_accounts WHERE id = $1")
        .bind(id.to_owned())
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(account_from_row).transpose()
}

/// The one statement that moves account rows by their deltas
/// ([`ledger::posting`] summed), with the ledger's balance rule
/// ([`ledger::may_hold`]) as its condition: a row changes only when no
/// pending sum goes below zero and, unless the account may go negative, its
/// available balance stays at or above zero. The caller expects one changed
/// row per account; fewer means a refusal (or a missing account), and the
/// transaction rolls back.
///
/// One statement locks the rows in an order the database picks. That cannot
/// deadlock the ladder's transactions: every transfer of a match touches its
/// private escrow and at most one shared account (an owner, or the house), and
/// the shared ones are reached statement by statement in one global order
/// (owners by id, the house last); a settlement batch locks its rows first, in
/// that order.
pub(crate) fn accounts_update(rows: &[(&str, Delta)]) -> (String, Vec<Arg>) {
    let sql = format!(
        "WITH d(d_id, d_debits_pending, d_debits_posted, d_credits_pending, d_credits_posted) AS (VALUES {}) \
         UPDATE ledger_accounts SET debits_pending = debits_pending + d.d_debits_pending, \
         debits_posted = debits_posted + d.d_debits_posted, \
         credits_pending = credits_pending + d.d_credits_pending, \
         credits_posted = credits_posted + d.d_credits_posted \
         FROM d WHERE ledger_accounts.id = d.d_id \
         AND debits_pending + d.d_debits_pending >= 0 AND credits_pending + d.d_credits_pending >= 0 \
         AND (may_go_negative = 1 OR credits_posted + d.d_credits_posted - debits_posted - d.d_debits_posted \
              - debits_pending - d.d_debits_pending >= 0)",
        placeholder_rows(rows.len(), 5)
    );
    let mut args = Vec::with_capacity(rows.len() * 5);
    for (id, delta) in rows {
        args.extend([
            Arg::from(*id),
            Arg::from(delta.debits_pending),
            Arg::from(delta.debits_posted),
            Arg::from(delta.credits_pending),
            Arg::from(delta.credits_posted),
        ]);
    }
    (sql, args)
}

/// Applies one transfer inside the caller's transaction. A retry with the same
/// id and fields is a no-op; with other fields, a conflict. Any error leaves the
/// transaction to be rolled back by the caller.
pub(crate) async fn apply_transfer(
    conn: &mut AnyConnection,
    request: &TransferRequest,
    now_ms: i64,
) -> Result<TransferOutcome> {
    request.validate()?;
    let kind = request.kind();
    let (debit, credit, amount) = match &request.op {
        TransferOp::Single {
            debit,
            credit,
            amount,
        }
        | TransferOp::Pending {
            debit,
            credit,
            amount,
        } => {
            let inserted = sqlx::query(
                "INSERT INTO transfers (id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms) \
                 VALUES ($1, $2, $3, $4, $5, NULL, $6, $7) ON CONFLICT DO NOTHING",
            )
            .bind(request.id.clone())
            .bind(kind.name())
            .bind(debit.clone())
            .bind(credit.clone())
            .bind(*amount)
            .bind(request.memo.clone())
            .bind(now_ms)
            .execute(&mut *conn)
            .await?;
            if inserted.rows_affected() == 0 {
                return match load_transfer(conn, &request.id).await? {
                    Some(existing) if existing.same_request(request) => {
                        Ok(TransferOutcome::AlreadyExists)
                    }
                    Some(existing) => Err(different_fields(&existing, request)),
                    None => Err(LadderError::corrupt(format!(
                        "transfer {} was neither inserted nor found",
                        request.id
                    ))),
                };
            }
            (debit.clone(), credit.clone(), *amount)
        }
        // One statement copies the pending transfer's accounts and amount and
        // claims both the id and the pending transfer (a conflict on either
        // unique index inserts nothing); the reasons are looked up only then.
        TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
            let resolved = sqlx::query(
                "INSERT INTO transfers (id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms) \
                 SELECT $1, $2, debit_account, credit_account, amount, id, $3, $4 FROM transfers \
                 WHERE id = $5 AND kind = 'pending' \
                 ON CONFLICT DO NOTHING RETURNING debit_account, credit_account, amount",
            )
            .bind(request.id.clone())
            .bind(kind.name())
            .bind(request.memo.clone())
            .bind(now_ms)
            .bind(pending_id.clone())
            .fetch_optional(&mut *conn)
            .await?;
            let Some(row) = resolved else {
                return why_not_resolved(conn, request, pending_id).await;
            };
            (
                get::<String>(&row, "debit_account")?,
                get::<String>(&row, "credit_account")?,
                get::<i64>(&row, "amount")?,
            )
        }
    };
    let [debit_delta, credit_delta] = ledger::posting(kind, amount);
    let (sql, args) = accounts_update(&[(&debit, debit_delta), (&credit, credit_delta)]);
    let mut script = Script::default();
    script.push(sql, args);
    let changed: u64 = script
        .run(conn, false)
        .await?
        .iter()
        .map(|answer| answer.affected)
        .sum();
    if changed != 2 {
        return Err(why_not_applied(conn, request, kind, &debit, &credit, amount).await?);
    }
    Ok(TransferOutcome::Created)
}

/// Why the accounts of a transfer could not take it (the caller rolls back).
async fn why_not_applied(
    conn: &mut AnyConnection,
    request: &TransferRequest,
    kind: TransferKind,
    debit: &str,
    credit: &str,
    amount: i64,
) -> Result<LadderError> {
    let Some(debit_account) = load_account(conn, debit).await? else {
        return Ok(LadderError::NotFound(format!("ledger account {debit}")));
    };
    if load_account(conn, credit).await?.is_none() {
        return Ok(LadderError::NotFound(format!("ledger account {credit}")));
    }
    Ok(match kind {
        // The credit side takes any amount, so the debit was refused. It is
        // reported as the statement saw it: a concurrent settlement may have
        // paid the owner since, so the balance is not checked again here.
        TransferKind::Single | TransferKind::Pending => LadderError::InsufficientCredits(format!(
            "account {debit} cannot cover transfer {} of {amount} credits ({} available now)",
            request.id,
            debit_account.available()
        )),
        TransferKind::Post | TransferKind::Void => {
            let short = if debit_account.debits_pending < amount {
                debit
            } else {
                credit
            };
            LadderError::corrupt(format!(
                "account {short} has less pending than transfer {}",
                request.id
            ))
        }
    })
}

/// Why a post or void of `pending_id` inserted nothing: an unknown or
/// non-pending transfer, a retry (same fields: a no-op), the id reused with
/// other fields, or the pending transfer resolved already by another.
async fn why_not_resolved(
    conn: &mut AnyConnection,
    request: &TransferRequest,
    pending_id: &str,
) -> Result<TransferOutcome> {
    let existing = load_transfer(conn, &request.id).await?;
    let Some(pending) = load_transfer(conn, pending_id).await? else {
        return Err(match existing {
            Some(existing) => different_fields(&existing, request),
            None => LadderError::NotFound(format!("pending transfer {pending_id}")),
        });
    };
    if pending.kind != TransferKind::Pending {
        return Err(LadderError::Invalid(format!(
            "transfer {pending_id} is a {} transfer, not a pending one",
            pending.kind.name()
        )));
    }
    if let Some(existing) = existing {
        return if existing.same_request(request) {
            Ok(TransferOutcome::AlreadyExists)
        } else {
            Err(different_fields(&existing, request))
        };
    }
    let by = sqlx::query("SELECT id FROM transfers WHERE pending_id = $1")
        .bind(pending_id.to_owned())
        .fetch_optional(&mut *conn)
        .await?
        .map(|row| get::<String>(&row, "id"))
        .transpose()?
        .unwrap_or_default();
    Err(LadderError::Conflict(format!(
        "pending transfer {pending_id} was already resolved by {by}"
    )))
}

fn different_fields(existing: &Transfer, request: &TransferRequest) -> LadderError {
    debug_assert!(!existing.same_request(request) || existing.id != request.id);
    LadderError::Conflict(format!(
        "transfer {} exists with different fields",
        request.id
    ))
}

impl Store {
    /// Applies one transfer in its own transaction.
    pub async fn transfer(&self, request: &TransferRequest) -> Result<TransferOutcome> {
        write_tx!(self, |conn| apply_transfer(conn, request, self.now()))
    }

    pub async fn account(&self, id: &str) -> Result<Account> {
        let mut conn = self.writer().await?;
        load_account(&mut conn, id)
            .await?
            .ok_or_else(|| LadderError::NotFound(format!("ledger account {id}")))
    }

    pub async fn transfer_by_id(&self, id: &str) -> Result<Option<Transfer>> {
        let mut conn = self.writer().await?;
        load_transfer(&mut conn, id).await
    }

    /// Every ledger invariant over the whole history (see [`ledger::check`]), plus
    /// each match's stakes resolved as its state says
    /// ([`ledger::check_stakes`]). `Ok(Err(..))` names the first violation.
    pub async fn ledger_check(&self) -> Result<Result<LedgerReport, LedgerViolation>> {
        // One transaction: a consistent snapshot on both backends.
        let mut conn = self.writer().await?;
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        let accounts = sqlx::query("SELECT * FROM ledger_accounts ORDER BY id")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(account_from_row)
            .collect::<Result<Vec<_>>>()?;
        let transfers = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TRANSFER_COLUMNS} FROM transfers ORDER BY seq"
        )))
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(transfer_from_row)
        .collect::<Result<Vec<_>>>()?;
        let matches = sqlx::query("SELECT id, state, winner FROM matches ORDER BY accepted_ms, id")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|row| {
                Ok(StakedMatch {
                    id: get(row, "id")?,
                    state: MatchState::from_name(&get::<String>(row, "state")?)?,
                    winner: get::<Option<String>>(row, "winner")?
                        .map(|winner| winner_from_name(&winner))
                        .transpose()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        tx.commit().await?;
        let report = match ledger::check(&accounts, &transfers) {
            Ok(report) => report,
            Err(violation) => return Ok(Err(violation)),
        };
        if let Err(violation) = ledger::check_stakes(&matches, &transfers) {
            return Ok(Err(violation));
        }
        Ok(Ok(report))
    }
}
