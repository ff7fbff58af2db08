//! The stakes ledger as plain data: transfer requests, the rake rule, and the
//! invariant check over accounts and transfers. The store applies transfers in
//! transactions; this module decides what is valid and what is consistent.
//!
//! Shape (after TigerBeetle): accounts keep four sums (pending and posted debits
//! and credits); transfers are immutable and carry caller-chosen unique ids; a
//! *pending* transfer reserves credits and is later *posted* or *voided*, each at
//! most once. An account's available balance is
//! `credits_posted − debits_posted − debits_pending`; only the issuance account
//! (the source of every granted credit) may go below zero.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{LadderError, Result};
use crate::limits::{MAX_MEMO_BYTES, MAX_TRANSFER_CREDITS, MAX_TRANSFER_ID_BYTES};

/// The account every granted credit comes from; its balance is minus the credits
/// in circulation.
pub const ISSUANCE_ACCOUNT: &str = "issuance";
/// Where rakes go.
pub const HOUSE_ACCOUNT: &str = "house";

pub fn owner_account(user_id: &str) -> String {
    format!("owner:{user_id}")
}

pub fn escrow_account(match_id: &str) -> String {
    format!("escrow:{match_id}")
}

/// Transfer ids of one match, so every retry of a step reuses its id.
pub fn stake_transfer_id(match_id: &str, side: char) -> String {
    format!("stake:{match_id}:{side}")
}
pub fn resolve_transfer_id(match_id: &str, side: char) -> String {
    format!("resolve:{match_id}:{side}")
}
pub fn payout_transfer_id(match_id: &str) -> String {
    format!("payout:{match_id}")
}
pub fn rake_transfer_id(match_id: &str) -> String {
    format!("rake:{match_id}")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferKind {
    /// Moves posted credits at once.
    Single,
    /// Reserves credits: counted against the debit account's balance until resolved.
    Pending,
    /// Completes a pending transfer in full.
    Post,
    /// Cancels a pending transfer in full: the credits return.
    Void,
}

impl TransferKind {
    pub fn name(self) -> &'static str {
        match self {
            TransferKind::Single => "single",
            TransferKind::Pending => "pending",
            TransferKind::Post => "post",
            TransferKind::Void => "void",
        }
    }

    pub fn from_name(name: &str) -> Result<TransferKind> {
        match name {
            "single" => Ok(TransferKind::Single),
            "pending" => Ok(TransferKind::Pending),
            "post" => Ok(TransferKind::Post),
            "void" => Ok(TransferKind::Void),
            other => Err(LadderError::corrupt(format!(
                "unknown transfer kind {other:?}"
            ))),
        }
    }
}

/// What a caller asks for. Post and void name the pending transfer; the accounts
/// and amount are taken from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferOp {
    Single {
        debit: String,
        credit: String,
        amount: i64,
    },
    Pending {
        debit: String,
        credit: String,
        amount: i64,
    },
    Post {
        pending_id: String,
    },
    Void {
        pending_id: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferRequest {
    pub id: String,
    pub op: TransferOp,
    pub memo: String,
}

impl TransferRequest {
    pub fn kind(&self) -> TransferKind {
        match self.op {
            TransferOp::Single { .. } => TransferKind::Single,
            TransferOp::Pending { .. } => TransferKind::Pending,
            TransferOp::Post { .. } => TransferKind::Post,
            TransferOp::Void { .. } => TransferKind::Void,
        }
    }

    /// Checks what can be checked without the database.
    pub fn validate(&self) -> Result<()> {
        if self.id.is_empty() || self.id.len() > MAX_TRANSFER_ID_BYTES {
            return Err(LadderError::Invalid(format!(
                "transfer id must be 1 to {MAX_TRANSFER_ID_BYTES} bytes"
            )));
        }
        if self.memo.len() > MAX_MEMO_BYTES {
            return Err(LadderError::Invalid(format!(
                "memo longer than {MAX_MEMO_BYTES} bytes"
            )));
        }
        match &self.op {
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
                if debit == credit {
                    return Err(LadderError::Invalid(format!(
                        "transfer {}: debit and credit are the same account {debit}",
                        self.id
                    )));
                }
                if *amount <= 0 || *amount > MAX_TRANSFER_CREDITS {
                    return Err(LadderError::Invalid(format!(
                        "transfer {}: amount must be 1 to {MAX_TRANSFER_CREDITS} credits, got {amount}",
                        self.id
                    )));
                }
                Ok(())
            }
            TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
                if pending_id.is_empty() {
                    return Err(LadderError::Invalid(format!(
                        "transfer {}: empty pending id",
                        self.id
                    )));
                }
                Ok(())
            }
        }
    }
}

/// A stored transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub id: String,
    pub kind: TransferKind,
    pub debit: String,
    pub credit: String,
    pub amount: i64,
    pub pending_id: Option<String>,
    pub memo: String,
    pub created_ms: i64,
}

impl Transfer {
    /// Whether a retried request asks for exactly this transfer.
    pub fn same_request(&self, request: &TransferRequest) -> bool {
        if self.memo != request.memo || self.kind != request.kind() {
            return false;
        }
        match &request.op {
            TransferOp::Single {
                debit,
                credit,
                amount,
            }
            | TransferOp::Pending {
                debit,
                credit,
                amount,
            } => &self.debit == debit && &self.credit == credit && self.amount == *amount,
            TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
                self.pending_id.as_deref() == Some(pending_id.as_str())
            }
        }
    }
}

/// What applying a transfer request did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferOutcome {
    Created,
    /// The same request was applied before: nothing changed.
    AlreadyExists,
}

/// A stored ledger account with its four sums.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Account {
    pub id: String,
    pub kind: String,
    pub may_go_negative: bool,
    pub debits_pending: i64,
    pub debits_posted: i64,
    pub credits_pending: i64,
    pub credits_posted: i64,
}

impl Account {
    /// Credits the holder may spend now: posted credits less posted and reserved debits.
    pub fn available(&self) -> i64 {
        self.credits_posted - self.debits_posted - self.debits_pending
    }
}

/// The rake on a pot of `pot` credits at `rake_bp` basis points: rounded down to
/// whole credits (the winner keeps the fraction).
pub fn rake_credits(pot: i64, rake_bp: i64) -> i64 {
    // i128: pot ≤ 2 · MAX_TRANSFER_CREDITS and rake_bp < 10 000 cannot overflow it.
    let rake = i128::from(pot) * i128::from(rake_bp) / 10_000;
    i64::try_from(rake).unwrap_or(0).clamp(0, pot.max(0))
}

/// Totals a clean ledger check reports.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LedgerReport {
    pub accounts: u64,
    pub transfers: u64,
    pub pending_unresolved: u64,
    /// Credits granted and still in circulation (minus the issuance balance).
    pub credits_in_circulation: i64,
    pub house_credits: i64,
}

#[derive(Default)]
struct Sums {
    debits_pending: i64,
    debits_posted: i64,
    credits_pending: i64,
    credits_posted: i64,
}

/// Verifies every ledger invariant over the full history, in a stable order, and
/// names the first violation: transfers well formed and referring to known
/// accounts (in the order given, the order they were applied), every post or void naming an earlier pending transfer with the same
/// accounts and amount, each pending transfer resolved at most once, stored sums
/// equal to those recomputed from the transfers, debits equal to credits, and no
/// balance below zero except the issuance account's.
pub fn check(accounts: &[Account], transfers: &[Transfer]) -> Result<LedgerReport, String> {
    let by_id: BTreeMap<&str, &Account> = accounts
        .iter()
        .map(|account| (account.id.as_str(), account))
        .collect();
    let mut sums: BTreeMap<&str, Sums> = accounts
        .iter()
        .map(|account| (account.id.as_str(), Sums::default()))
        .collect();
    // Pending transfers seen so far: a resolution must come after its pending transfer.
    let mut pendings: BTreeMap<&str, &Transfer> = BTreeMap::new();
    let mut resolved: BTreeSet<&str> = BTreeSet::new();
    for transfer in transfers {
        let id = &transfer.id;
        if transfer.amount <= 0 {
            return Err(format!(
                "transfer {id} has non-positive amount {}",
                transfer.amount
            ));
        }
        if transfer.debit == transfer.credit {
            return Err(format!("transfer {id} debits and credits the same account"));
        }
        for account in [&transfer.debit, &transfer.credit] {
            if !by_id.contains_key(account.as_str()) {
                return Err(format!("transfer {id} names unknown account {account}"));
            }
        }
        let amount = transfer.amount;
        let (debit, credit) = (transfer.debit.as_str(), transfer.credit.as_str());
        match transfer.kind {
            TransferKind::Single => {
                add(&mut sums, debit, |sums| sums.debits_posted += amount);
                add(&mut sums, credit, |sums| sums.credits_posted += amount);
            }
            TransferKind::Pending => {
                if transfer.pending_id.is_some() {
                    return Err(format!("pending transfer {id} names a pending id"));
                }
                add(&mut sums, debit, |sums| sums.debits_pending += amount);
                add(&mut sums, credit, |sums| sums.credits_pending += amount);
                pendings.insert(id.as_str(), transfer);
            }
            TransferKind::Post | TransferKind::Void => {
                let Some(pending_id) = transfer.pending_id.as_deref() else {
                    return Err(format!(
                        "{} transfer {id} names no pending transfer",
                        transfer.kind.name()
                    ));
                };
                let Some(pending) = pendings.get(pending_id) else {
                    return Err(format!(
                        "transfer {id} resolves {pending_id}, which is not an earlier pending transfer"
                    ));
                };
                if pending.debit != transfer.debit
                    || pending.credit != transfer.credit
                    || pending.amount != amount
                {
                    return Err(format!(
                        "transfer {id} differs from the pending transfer {pending_id} it resolves"
                    ));
                }
                if !resolved.insert(pending_id) {
                    return Err(format!(
                        "pending transfer {pending_id} is resolved more than once"
                    ));
                }
                add(&mut sums, debit, |sums| sums.debits_pending -= amount);
                add(&mut sums, credit, |sums| sums.credits_pending -= amount);
                if transfer.kind == TransferKind::Post {
                    add(&mut sums, debit, |sums| sums.debits_posted += amount);
                    add(&mut sums, credit, |sums| sums.credits_posted += amount);
                }
            }
        }
    }
    let mut totals = Sums::default();
    let mut report = LedgerReport {
        accounts: accounts.len() as u64,
        transfers: transfers.len() as u64,
        pending_unresolved: (pendings.len() - resolved.len()) as u64,
        ..LedgerReport::default()
    };
    for account in accounts {
        let recomputed = &sums[account.id.as_str()];
        let stored = [
            (
                "debits_pending",
                account.debits_pending,
                recomputed.debits_pending,
            ),
            (
                "debits_posted",
                account.debits_posted,
                recomputed.debits_posted,
            ),
            (
                "credits_pending",
                account.credits_pending,
                recomputed.credits_pending,
            ),
            (
                "credits_posted",
                account.credits_posted,
                recomputed.credits_posted,
            ),
        ];
        for (field, stored, history) in stored {
            if stored != history {
                return Err(format!(
                    "account {} has {field} {stored} but its transfers sum to {history}",
                    account.id
                ));
            }
        }
        if !account.may_go_negative && account.available() < 0 {
            return Err(format!(
                "account {} is below zero: {} credits",
                account.id,
                account.available()
            ));
        }
        totals.debits_pending += account.debits_pending;
        totals.debits_posted += account.debits_posted;
        totals.credits_pending += account.credits_pending;
        totals.credits_posted += account.credits_posted;
        if account.id == ISSUANCE_ACCOUNT {
            report.credits_in_circulation = -account.available();
        }
        if account.id == HOUSE_ACCOUNT {
            report.house_credits = account.available();
        }
    }
    if totals.debits_posted != totals.credits_posted {
        return Err(format!(
            "posted debits {} differ from posted credits {}",
            totals.debits_posted, totals.credits_posted
        ));
    }
    if totals.debits_pending != totals.credits_pending {
        return Err(format!(
            "pending debits {} differ from pending credits {}",
            totals.debits_pending, totals.credits_pending
        ));
    }
    Ok(report)
}

fn add<'a>(sums: &mut BTreeMap<&'a str, Sums>, account: &'a str, change: impl FnOnce(&mut Sums)) {
    if let Some(entry) = sums.get_mut(account) {
        change(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rake_rounds_down_in_the_winners_favour() {
        assert_eq!(rake_credits(200, 500), 10);
        assert_eq!(rake_credits(39, 500), 1);
        assert_eq!(rake_credits(19, 500), 0);
        assert_eq!(rake_credits(0, 500), 0);
        assert_eq!(
            rake_credits(2 * MAX_TRANSFER_CREDITS, 5_000),
            MAX_TRANSFER_CREDITS
        );
    }
}
