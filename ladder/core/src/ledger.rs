//! The stakes ledger as plain data: transfer requests, the rake rule, the
//! settlement plan of a match ([`settle`]: its transfers and rating updates), an
//! in-memory ledger ([`Book`]) and the invariant check over accounts and
//! transfers. The store applies plans in transactions; this module decides what
//! a settlement does, what is valid and what is consistent. Nothing here reads
//! a clock or a database.
//!
//! Shape (after TigerBeetle): accounts keep four sums (pending and posted debits
//! and credits); transfers are immutable and carry caller-chosen unique ids; a
//! *pending* transfer reserves credits and is later *posted* or *voided*, each at
//! most once. An account's available balance is
//! `credits_posted − debits_posted − debits_pending`; only the issuance account
//! (the source of every granted credit) may go below zero.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{CoreError, Result};
use crate::limits::{MAX_MEMO_BYTES, MAX_TRANSFER_CREDITS, MAX_TRANSFER_ID_BYTES};
use crate::model::{Match, MatchState, Winner};
use crate::rating::{self, Rating, Score};

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
            other => Err(CoreError::corrupt(format!(
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
            return Err(CoreError::Invalid(format!(
                "transfer id must be 1 to {MAX_TRANSFER_ID_BYTES} bytes"
            )));
        }
        if self.memo.len() > MAX_MEMO_BYTES {
            return Err(CoreError::Invalid(format!(
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
                    return Err(CoreError::Invalid(format!(
                        "transfer {}: debit and credit are the same account {debit}",
                        self.id
                    )));
                }
                if *amount <= 0 || *amount > MAX_TRANSFER_CREDITS {
                    return Err(CoreError::Invalid(format!(
                        "transfer {}: amount must be 1 to {MAX_TRANSFER_CREDITS} credits, got {amount}",
                        self.id
                    )));
                }
                Ok(())
            }
            TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
                if pending_id.is_empty() {
                    return Err(CoreError::Invalid(format!(
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

/// The sides of a match in the order their owners' ledger rows are locked (by
/// owner id), so two transactions never wait on each other in a cycle.
pub fn sides_in_lock_order(game: &Match) -> [(usize, char); 2] {
    if game.sides[1].owner_id < game.sides[0].owner_id {
        [(1, 'b'), (0, 'a')]
    } else {
        [(0, 'a'), (1, 'b')]
    }
}

/// The two stakes of an accepted match: pending transfers from each owner into
/// the match escrow, in lock order.
pub fn stakes(game: &Match) -> Vec<TransferRequest> {
    let escrow = escrow_account(&game.id);
    sides_in_lock_order(game)
        .into_iter()
        .map(|(index, letter)| TransferRequest {
            id: stake_transfer_id(&game.id, letter),
            op: TransferOp::Pending {
                debit: owner_account(&game.sides[index].owner_id),
                credit: escrow.clone(),
                amount: game.sides[index].stake,
            },
            memo: format!("stake of side {letter}"),
        })
        .collect()
}

/// Both stakes returned (a void, or a draw), in lock order.
pub fn returns(game: &Match, memo: &str) -> Vec<TransferRequest> {
    sides_in_lock_order(game)
        .into_iter()
        .map(|(_, letter)| TransferRequest {
            id: resolve_transfer_id(&game.id, letter),
            op: TransferOp::Void {
                pending_id: stake_transfer_id(&game.id, letter),
            },
            memo: memo.to_owned(),
        })
        .collect()
}

/// One bot's rating change in a settlement.
#[derive(Clone, Debug, PartialEq)]
pub struct RatingChange {
    pub bot_id: String,
    pub score: Score,
    pub before: Rating,
    pub after: Rating,
}

/// Everything settling a match changes, decided before anything is written.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub match_id: String,
    pub winner: Winner,
    /// Both stakes.
    pub pot: i64,
    pub rake_bp: i64,
    /// Credits to the house (0 on a draw).
    pub rake: i64,
    /// Credits to the winner's owner (0 on a draw).
    pub payout: i64,
    /// In the order they are applied: stakes resolved (owners by id), then the
    /// payout, then the rake (the house last).
    pub transfers: Vec<TransferRequest>,
    /// Sorted by bot id; empty when the match's season has ended.
    pub ratings: Vec<RatingChange>,
}

/// What settling a match did.
#[derive(Clone, Debug, PartialEq)]
pub struct Settlement {
    pub match_id: String,
    pub winner: Winner,
    pub pot: i64,
    pub rake: i64,
    pub payout: i64,
    /// True when this call found the match already settled by the same lease.
    pub already_settled: bool,
    /// The plan this call applied (`None` when it was already settled).
    pub plan: Option<Plan>,
}

/// The settlement of `game` won by `winner` at `rake_bp` basis points: a win
/// posts both stakes and pays the pot less the rake to the winner's owner and
/// the rake to the house; a draw returns both stakes and pays no rake. `ratings`
/// are both sides' ratings (a, b) before the match, `None` when its season has
/// ended (ratings are frozen then). Pure: the same inputs give the same plan.
pub fn settle(game: &Match, winner: Winner, rake_bp: i64, ratings: Option<[Rating; 2]>) -> Plan {
    let pot = game.sides[0].stake.saturating_add(game.sides[1].stake);
    let (rake, payout, transfers) = match winner {
        Winner::Draw => (0, 0, returns(game, "draw: stake returned")),
        Winner::A | Winner::B => {
            let mut transfers: Vec<TransferRequest> = sides_in_lock_order(game)
                .into_iter()
                .map(|(_, letter)| TransferRequest {
                    id: resolve_transfer_id(&game.id, letter),
                    op: TransferOp::Post {
                        pending_id: stake_transfer_id(&game.id, letter),
                    },
                    memo: "stake posted".to_owned(),
                })
                .collect();
            let rake = rake_credits(pot, rake_bp);
            let payout = pot - rake;
            let winner_side = &game.sides[if winner == Winner::A { 0 } else { 1 }];
            if payout > 0 {
                transfers.push(TransferRequest {
                    id: payout_transfer_id(&game.id),
                    op: TransferOp::Single {
                        debit: escrow_account(&game.id),
                        credit: owner_account(&winner_side.owner_id),
                        amount: payout,
                    },
                    memo: "pot less rake".to_owned(),
                });
            }
            if rake > 0 {
                transfers.push(TransferRequest {
                    id: rake_transfer_id(&game.id),
                    op: TransferOp::Single {
                        debit: escrow_account(&game.id),
                        credit: HOUSE_ACCOUNT.to_owned(),
                        amount: rake,
                    },
                    memo: format!("rake {rake_bp} bp"),
                });
            }
            (rake, payout, transfers)
        }
    };
    let ratings = match ratings {
        None => Vec::new(),
        Some([before_a, before_b]) => {
            let (score_a, score_b) = match winner {
                Winner::A => (Score::Win, Score::Loss),
                Winner::B => (Score::Loss, Score::Win),
                Winner::Draw => (Score::Draw, Score::Draw),
            };
            let (after_a, after_b) = rating::update(before_a, before_b, score_a);
            let mut changes = vec![
                RatingChange {
                    bot_id: game.sides[0].bot_id.clone(),
                    score: score_a,
                    before: before_a,
                    after: after_a,
                },
                RatingChange {
                    bot_id: game.sides[1].bot_id.clone(),
                    score: score_b,
                    before: before_b,
                    after: after_b,
                },
            ];
            changes.sort_by(|left, right| left.bot_id.cmp(&right.bot_id));
            changes
        }
    };
    Plan {
        match_id: game.id.clone(),
        winner,
        pot,
        rake_bp,
        rake,
        payout,
        transfers,
        ratings,
    }
}

/// What transfers move on one account's four sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    pub debits_pending: i64,
    pub debits_posted: i64,
    pub credits_pending: i64,
    pub credits_posted: i64,
}

impl Delta {
    pub fn add(&mut self, other: Delta) {
        self.debits_pending += other.debits_pending;
        self.debits_posted += other.debits_posted;
        self.credits_pending += other.credits_pending;
        self.credits_posted += other.credits_posted;
    }

    pub fn apply_to(&self, account: &mut Account) {
        account.debits_pending += self.debits_pending;
        account.debits_posted += self.debits_posted;
        account.credits_pending += self.credits_pending;
        account.credits_posted += self.credits_posted;
    }
}

/// The posting rule, written once: what a transfer of `kind` moving `amount`
/// does to its debit account and to its credit account. A pending transfer
/// reserves; a post moves the reservation to posted; a void releases it.
pub fn posting(kind: TransferKind, amount: i64) -> [Delta; 2] {
    let (pending, posted) = match kind {
        TransferKind::Single => (0, amount),
        TransferKind::Pending => (amount, 0),
        TransferKind::Post => (-amount, amount),
        TransferKind::Void => (-amount, 0),
    };
    [
        Delta {
            debits_pending: pending,
            debits_posted: posted,
            ..Delta::default()
        },
        Delta {
            credits_pending: pending,
            credits_posted: posted,
            ..Delta::default()
        },
    ]
}

/// Whether an account may hold `delta` on top of `account`: no pending sum
/// below zero, and no available balance below zero unless the account may go
/// negative. The store's SQL states the same rule over rows
/// (`duel_ladder_store`'s account update); this is the reading both agree with.
pub fn may_hold(account: &Account, delta: Delta) -> bool {
    let mut after = account.clone();
    delta.apply_to(&mut after);
    after.debits_pending >= 0
        && after.credits_pending >= 0
        && (after.may_go_negative || after.available() >= 0)
}

/// The pending stake `pending_id` of `game` as acceptance made it: (debit,
/// credit, amount). A plan resolves only its own match's stakes.
pub fn pending_stake(game: &Match, pending_id: &str) -> Result<(String, String, i64)> {
    stakes(game)
        .into_iter()
        .find(|stake| stake.id == pending_id)
        .and_then(|stake| match stake.op {
            TransferOp::Pending {
                debit,
                credit,
                amount,
            } => Some((debit, credit, amount)),
            _ => None,
        })
        .ok_or_else(|| {
            CoreError::Corrupt(format!(
                "settlement of match {} resolves {pending_id}, not one of its stakes",
                game.id
            ))
        })
}

/// What settling `game` by `plan` moves on each account, summed: what the
/// store writes to the account rows (a batch adds several plans' deltas). A
/// plan posts or voids the stakes acceptance made and makes single transfers;
/// a pending transfer in a plan is corrupt.
pub fn deltas(game: &Match, plan: &Plan) -> Result<BTreeMap<String, Delta>> {
    let mut sums: BTreeMap<String, Delta> = BTreeMap::new();
    for request in &plan.transfers {
        request.validate()?;
        let (debit, credit, amount) = match &request.op {
            TransferOp::Single {
                debit,
                credit,
                amount,
            } => (debit.clone(), credit.clone(), *amount),
            TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
                pending_stake(game, pending_id)?
            }
            TransferOp::Pending { .. } => {
                return Err(CoreError::Corrupt(format!(
                    "settlement plan {} makes a pending transfer",
                    plan.match_id
                )));
            }
        };
        let [debit_delta, credit_delta] = posting(request.kind(), amount);
        sums.entry(debit).or_default().add(debit_delta);
        sums.entry(credit).or_default().add(credit_delta);
    }
    Ok(sums)
}

/// What a settle request may do with a match, decided from its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettleGate {
    /// Running under this lease, not expired: settle it.
    Settle,
    /// Already settled by this lease: answer what was paid, write nothing.
    Repeat,
    /// Any other state or holder: the lease no longer holds the match.
    LeaseLost,
}

/// The settle-or-lease rule, written once: a lease settles its running match
/// until the lease expires (an expiry equal to `now_ms` still holds), and a
/// repeat by the lease that settled reads the settlement.
pub fn may_settle(
    state: MatchState,
    holds_lease: bool,
    lease_expires_ms: Option<i64>,
    now_ms: i64,
) -> SettleGate {
    match state {
        MatchState::Settled if holds_lease => SettleGate::Repeat,
        MatchState::Running
            if holds_lease && lease_expires_ms.is_some_and(|expires| expires >= now_ms) =>
        {
            SettleGate::Settle
        }
        _ => SettleGate::LeaseLost,
    }
}

/// The lease rule of a void: a worker voids only the running match its lease
/// holds, until the lease expires (an expiry equal to `now_ms` still holds),
/// as [`may_settle`] lets it settle.
pub fn may_void(
    state: MatchState,
    holds_lease: bool,
    lease_expires_ms: Option<i64>,
    now_ms: i64,
) -> bool {
    state == MatchState::Running
        && may_settle(state, holds_lease, lease_expires_ms, now_ms) == SettleGate::Settle
}

/// The stake of one side of a match, whether queued once or played
/// continuously: 1 to [`MAX_TRANSFER_CREDITS`] credits.
pub fn check_stake(stake: i64) -> Result<()> {
    if stake <= 0 || stake > MAX_TRANSFER_CREDITS {
        return Err(CoreError::Invalid(format!(
            "stake must be 1 to {MAX_TRANSFER_CREDITS} credits"
        )));
    }
    Ok(())
}

/// Why an active bot is paused before a wave pairs it: its owner's
/// `available` balance no longer covers its `stake`. `None` while it does.
pub fn short_of_stake(available: i64, stake: i64) -> Option<String> {
    (available < stake).then(|| format!("balance {available} is below the stake {stake}"))
}

/// An in-memory ledger with the store's rules: what a sequence of transfer
/// requests does, without a database. The property test runs whole seasons
/// over it and checks that the stores end in the same state.
#[derive(Clone, Debug, Default)]
pub struct Book {
    accounts: BTreeMap<String, Account>,
    transfers: BTreeMap<String, Transfer>,
    /// Pending transfer id → the transfer that resolved it.
    resolved: BTreeMap<String, String>,
    /// Transfer ids in the order they were applied.
    order: Vec<String>,
}

impl Book {
    pub fn new() -> Book {
        Book::default()
    }

    /// Opens an account (a no-op when it exists, as in the store).
    pub fn open(&mut self, id: &str, kind: &str, may_go_negative: bool) {
        self.accounts
            .entry(id.to_owned())
            .or_insert_with(|| Account {
                id: id.to_owned(),
                kind: kind.to_owned(),
                may_go_negative,
                ..Account::default()
            });
    }

    pub fn account(&self, id: &str) -> Option<&Account> {
        self.accounts.get(id)
    }

    pub fn accounts(&self) -> impl Iterator<Item = &Account> {
        self.accounts.values()
    }

    /// Every transfer, in the order applied.
    pub fn transfers(&self) -> Vec<Transfer> {
        self.order
            .iter()
            .filter_map(|id| self.transfers.get(id).cloned())
            .collect()
    }

    /// Applies one request with the same outcomes as the store: a retry with
    /// the same fields is `AlreadyExists`, other fields a conflict, a debit
    /// beyond the available balance `InsufficientCredits`. A refused request
    /// changes nothing.
    pub fn apply(&mut self, request: &TransferRequest, now_ms: i64) -> Result<TransferOutcome> {
        request.validate()?;
        if let Some(existing) = self.transfers.get(&request.id) {
            return if existing.same_request(request) {
                Ok(TransferOutcome::AlreadyExists)
            } else {
                Err(CoreError::Conflict(format!(
                    "transfer {} exists with different fields",
                    request.id
                )))
            };
        }
        let kind = request.kind();
        let (debit, credit, amount, pending_id) = match &request.op {
            TransferOp::Single {
                debit,
                credit,
                amount,
            }
            | TransferOp::Pending {
                debit,
                credit,
                amount,
            } => (debit.clone(), credit.clone(), *amount, None),
            TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
                let pending = self
                    .transfers
                    .get(pending_id)
                    .ok_or_else(|| CoreError::NotFound(format!("pending transfer {pending_id}")))?;
                if pending.kind != TransferKind::Pending {
                    return Err(CoreError::Invalid(format!(
                        "transfer {pending_id} is a {} transfer, not a pending one",
                        pending.kind.name()
                    )));
                }
                if let Some(by) = self.resolved.get(pending_id) {
                    return Err(CoreError::Conflict(format!(
                        "pending transfer {pending_id} was already resolved by {by}"
                    )));
                }
                (
                    pending.debit.clone(),
                    pending.credit.clone(),
                    pending.amount,
                    Some(pending_id.clone()),
                )
            }
        };
        for id in [&debit, &credit] {
            if !self.accounts.contains_key(id) {
                return Err(CoreError::NotFound(format!("ledger account {id}")));
            }
        }
        let [debit_delta, credit_delta] = posting(kind, amount);
        let debit_account = &self.accounts[&debit];
        if !may_hold(debit_account, debit_delta) {
            return Err(CoreError::InsufficientCredits(format!(
                "account {debit} cannot cover transfer {} of {amount} credits ({} available now)",
                request.id,
                debit_account.available()
            )));
        }
        if let Some(account) = self.accounts.get_mut(&debit) {
            debit_delta.apply_to(account);
        }
        if let Some(account) = self.accounts.get_mut(&credit) {
            credit_delta.apply_to(account);
        }
        if let Some(pending_id) = &pending_id {
            self.resolved.insert(pending_id.clone(), request.id.clone());
        }
        self.transfers.insert(
            request.id.clone(),
            Transfer {
                id: request.id.clone(),
                kind,
                debit,
                credit,
                amount,
                pending_id,
                memo: request.memo.clone(),
                created_ms: now_ms,
            },
        );
        self.order.push(request.id.clone());
        Ok(TransferOutcome::Created)
    }

    /// The invariant check over this book (see [`check`]).
    pub fn check(&self) -> Result<LedgerReport, LedgerViolation> {
        let accounts: Vec<Account> = self.accounts.values().cloned().collect();
        check(&accounts, &self.transfers())
    }
}

/// The first broken invariant a ledger check finds, named as operators read
/// it (`ladder ledger check`): the ledger's own ([`check`]) and the stakes of
/// each match against its state ([`check_stakes`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerViolation {
    #[error("transfer {transfer} has non-positive amount {amount}")]
    NonPositiveAmount { transfer: String, amount: i64 },
    #[error("transfer {transfer} debits and credits the same account")]
    OneAccount { transfer: String },
    #[error("transfer {transfer} names unknown account {account}")]
    UnknownAccount { transfer: String, account: String },
    #[error("pending transfer {transfer} names a pending id")]
    PendingNamesPending { transfer: String },
    #[error("{} transfer {transfer} names no pending transfer", kind.name())]
    NoPendingNamed {
        kind: TransferKind,
        transfer: String,
    },
    #[error("transfer {transfer} resolves {pending}, which is not an earlier pending transfer")]
    NotAnEarlierPending { transfer: String, pending: String },
    #[error("transfer {transfer} differs from the pending transfer {pending} it resolves")]
    DiffersFromPending { transfer: String, pending: String },
    #[error("pending transfer {pending} is resolved more than once")]
    ResolvedTwice { pending: String },
    #[error("account {account} has {field} {stored} but its transfers sum to {history}")]
    SumDiffers {
        account: String,
        field: &'static str,
        stored: i64,
        history: i64,
    },
    #[error("account {account} is below zero: {available} credits")]
    BelowZero { account: String, available: i64 },
    #[error("posted debits {debits} differ from posted credits {credits}")]
    PostedUnbalanced { debits: i64, credits: i64 },
    #[error("pending debits {debits} differ from pending credits {credits}")]
    PendingUnbalanced { debits: i64, credits: i64 },
    #[error("match {match_id} has no stake transfer {stake}")]
    NoStake { match_id: String, stake: String },
    #[error("stake {stake} is not a pending transfer into the match escrow")]
    StakeNotInEscrow { stake: String },
    #[error(
        "match {match_id} is {} but stake {stake} is {} (expected {})",
        state.name(),
        resolution_name(*resolution),
        resolution_name(*expected)
    )]
    StakeResolution {
        match_id: String,
        state: MatchState,
        stake: String,
        resolution: Option<TransferKind>,
        expected: Option<TransferKind>,
    },
    #[error("stake {stake} resolved by unexpected transfer {transfer}")]
    UnexpectedResolution { stake: String, transfer: String },
}

fn resolution_name(kind: Option<TransferKind>) -> &'static str {
    kind.map_or("unresolved", TransferKind::name)
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
pub fn check(
    accounts: &[Account],
    transfers: &[Transfer],
) -> Result<LedgerReport, LedgerViolation> {
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
            return Err(LedgerViolation::NonPositiveAmount {
                transfer: id.clone(),
                amount: transfer.amount,
            });
        }
        if transfer.debit == transfer.credit {
            return Err(LedgerViolation::OneAccount {
                transfer: id.clone(),
            });
        }
        for account in [&transfer.debit, &transfer.credit] {
            if !by_id.contains_key(account.as_str()) {
                return Err(LedgerViolation::UnknownAccount {
                    transfer: id.clone(),
                    account: account.clone(),
                });
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
                    return Err(LedgerViolation::PendingNamesPending {
                        transfer: id.clone(),
                    });
                }
                add(&mut sums, debit, |sums| sums.debits_pending += amount);
                add(&mut sums, credit, |sums| sums.credits_pending += amount);
                pendings.insert(id.as_str(), transfer);
            }
            TransferKind::Post | TransferKind::Void => {
                let Some(pending_id) = transfer.pending_id.as_deref() else {
                    return Err(LedgerViolation::NoPendingNamed {
                        kind: transfer.kind,
                        transfer: id.clone(),
                    });
                };
                let Some(pending) = pendings.get(pending_id) else {
                    return Err(LedgerViolation::NotAnEarlierPending {
                        transfer: id.clone(),
                        pending: pending_id.to_owned(),
                    });
                };
                if pending.debit != transfer.debit
                    || pending.credit != transfer.credit
                    || pending.amount != amount
                {
                    return Err(LedgerViolation::DiffersFromPending {
                        transfer: id.clone(),
                        pending: pending_id.to_owned(),
                    });
                }
                if !resolved.insert(pending_id) {
                    return Err(LedgerViolation::ResolvedTwice {
                        pending: pending_id.to_owned(),
                    });
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
                return Err(LedgerViolation::SumDiffers {
                    account: account.id.clone(),
                    field,
                    stored,
                    history,
                });
            }
        }
        if !account.may_go_negative && account.available() < 0 {
            return Err(LedgerViolation::BelowZero {
                account: account.id.clone(),
                available: account.available(),
            });
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
        return Err(LedgerViolation::PostedUnbalanced {
            debits: totals.debits_posted,
            credits: totals.credits_posted,
        });
    }
    if totals.debits_pending != totals.credits_pending {
        return Err(LedgerViolation::PendingUnbalanced {
            debits: totals.debits_pending,
            credits: totals.credits_pending,
        });
    }
    Ok(report)
}

/// A match as [`check_stakes`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StakedMatch {
    pub id: String,
    pub state: MatchState,
    pub winner: Option<Winner>,
}

/// Every match's two stakes are pending transfers into its escrow, resolved
/// as its state says: unresolved while queued or running, posted when
/// settled with a winner, voided when settled as a draw or voided, each by
/// the resolution transfer settlement names. Names the first mismatch.
pub fn check_stakes(
    matches: &[StakedMatch],
    transfers: &[Transfer],
) -> Result<(), LedgerViolation> {
    let by_id: BTreeMap<&str, &Transfer> = transfers
        .iter()
        .map(|transfer| (transfer.id.as_str(), transfer))
        .collect();
    let resolved: BTreeMap<&str, &Transfer> = transfers
        .iter()
        .filter_map(|transfer| {
            transfer
                .pending_id
                .as_deref()
                .map(|pending| (pending, transfer))
        })
        .collect();
    for game in matches {
        let match_id = &game.id;
        for side in ['a', 'b'] {
            let stake_id = stake_transfer_id(match_id, side);
            let Some(stake) = by_id.get(stake_id.as_str()) else {
                return Err(LedgerViolation::NoStake {
                    match_id: match_id.clone(),
                    stake: stake_id,
                });
            };
            if stake.kind != TransferKind::Pending || stake.credit != escrow_account(match_id) {
                return Err(LedgerViolation::StakeNotInEscrow { stake: stake_id });
            }
            let resolution = resolved
                .get(stake_id.as_str())
                .map(|transfer| transfer.kind);
            let expected = match (game.state, game.winner) {
                (MatchState::Queued | MatchState::Running, _) => None,
                (MatchState::Settled, Some(Winner::A | Winner::B)) => Some(TransferKind::Post),
                (MatchState::Settled, _) | (MatchState::Voided, _) => Some(TransferKind::Void),
            };
            if resolution != expected {
                return Err(LedgerViolation::StakeResolution {
                    match_id: match_id.clone(),
                    state: game.state,
                    stake: stake_id,
                    resolution,
                    expected,
                });
            }
            if let Some(transfer) = resolved.get(stake_id.as_str())
                && transfer.id != resolve_transfer_id(match_id, side)
            {
                return Err(LedgerViolation::UnexpectedResolution {
                    stake: stake_id,
                    transfer: transfer.id.clone(),
                });
            }
        }
    }
    Ok(())
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

    use crate::model::{MatchSide, MatchState};
    use crate::rating::INITIAL;

    /// A match between owners `owner_a` and `owner_b` with the given stakes.
    fn game(owner_a: &str, owner_b: &str, stakes: [i64; 2]) -> Match {
        let side = |bot: &str, owner: &str, stake| MatchSide {
            bot_id: bot.to_owned(),
            bot_name: String::new(),
            version: 1,
            owner_id: owner.to_owned(),
            stake,
        };
        Match {
            id: "m1".to_owned(),
            season_id: 1,
            class: duel_rules::WeightClass::Light,
            ruleset: "1.0.0".to_owned(),
            budget: 0,
            rake_bp: 500,
            seed: 7,
            opening_exchanges: 0,
            sides: [
                side("bot-z", owner_a, stakes[0]),
                side("bot-y", owner_b, stakes[1]),
            ],
            state: MatchState::Running,
            attempts: 1,
            accepted_ms: 0,
            finished_ms: None,
            winner: None,
            replay_path: None,
            note: None,
            last_failure: None,
            repeat_of: None,
            not_rated: None,
        }
    }

    fn single(id: &str, debit: &str, credit: &str, amount: i64, memo: &str) -> TransferRequest {
        TransferRequest {
            id: id.to_owned(),
            op: TransferOp::Single {
                debit: debit.to_owned(),
                credit: credit.to_owned(),
                amount,
            },
            memo: memo.to_owned(),
        }
    }

    fn resolve(letter: char, post: bool, memo: &str) -> TransferRequest {
        let pending_id = stake_transfer_id("m1", letter);
        TransferRequest {
            id: resolve_transfer_id("m1", letter),
            op: if post {
                TransferOp::Post { pending_id }
            } else {
                TransferOp::Void { pending_id }
            },
            memo: memo.to_owned(),
        }
    }

    /// Owners a and b, stakes, winner, rake bp → pot, rake, payout, transfers.
    type Case = (
        &'static str,
        &'static str,
        [i64; 2],
        Winner,
        i64,
        [i64; 3],
        Vec<TransferRequest>,
    );

    #[test]
    fn settlement_plans_as_a_table() {
        let cases: Vec<Case> = vec![
            (
                "alice",
                "bob",
                [100, 99],
                Winner::A,
                500,
                [199, 9, 190],
                vec![
                    resolve('a', true, "stake posted"),
                    resolve('b', true, "stake posted"),
                    single(
                        "payout:m1",
                        "escrow:m1",
                        "owner:alice",
                        190,
                        "pot less rake",
                    ),
                    single("rake:m1", "escrow:m1", "house", 9, "rake 500 bp"),
                ],
            ),
            // Owners are locked by id: bob's stake first when bob is side b.
            (
                "carol",
                "bob",
                [10, 10],
                Winner::B,
                500,
                [20, 1, 19],
                vec![
                    resolve('b', true, "stake posted"),
                    resolve('a', true, "stake posted"),
                    single("payout:m1", "escrow:m1", "owner:bob", 19, "pot less rake"),
                    single("rake:m1", "escrow:m1", "house", 1, "rake 500 bp"),
                ],
            ),
            // A rake that rounds to nothing is not a transfer.
            (
                "alice",
                "bob",
                [9, 10],
                Winner::A,
                500,
                [19, 0, 19],
                vec![
                    resolve('a', true, "stake posted"),
                    resolve('b', true, "stake posted"),
                    single("payout:m1", "escrow:m1", "owner:alice", 19, "pot less rake"),
                ],
            ),
            // No rake at all.
            (
                "alice",
                "bob",
                [5, 5],
                Winner::B,
                0,
                [10, 0, 10],
                vec![
                    resolve('a', true, "stake posted"),
                    resolve('b', true, "stake posted"),
                    single("payout:m1", "escrow:m1", "owner:bob", 10, "pot less rake"),
                ],
            ),
            // A draw returns both stakes, no rake, whatever the rate.
            (
                "alice",
                "bob",
                [100, 40],
                Winner::Draw,
                5_000,
                [140, 0, 0],
                vec![
                    resolve('a', false, "draw: stake returned"),
                    resolve('b', false, "draw: stake returned"),
                ],
            ),
        ];
        for (owner_a, owner_b, stakes, winner, rake_bp, [pot, rake, payout], transfers) in cases {
            let plan = settle(&game(owner_a, owner_b, stakes), winner, rake_bp, None);
            let case = format!("{owner_a}/{owner_b} {stakes:?} {winner:?} at {rake_bp} bp");
            assert_eq!(
                (plan.pot, plan.rake, plan.payout),
                (pot, rake, payout),
                "{case}"
            );
            assert_eq!(plan.transfers, transfers, "{case}");
            assert!(
                plan.ratings.is_empty(),
                "{case}: season closed, ratings frozen"
            );
        }
    }

    #[test]
    fn settlement_moves_ratings_in_bot_id_order() {
        let strong = Rating {
            rating: 1700.0,
            deviation: 80.0,
            volatility: 0.06,
        };
        for (winner, score_a, score_b) in [
            (Winner::A, Score::Win, Score::Loss),
            (Winner::B, Score::Loss, Score::Win),
            (Winner::Draw, Score::Draw, Score::Draw),
        ] {
            let plan = settle(
                &game("alice", "bob", [1, 1]),
                winner,
                500,
                Some([INITIAL, strong]),
            );
            let (after_a, after_b) = rating::update(INITIAL, strong, score_a);
            // bot-y (side b) sorts before bot-z (side a).
            assert_eq!(
                plan.ratings,
                vec![
                    RatingChange {
                        bot_id: "bot-y".to_owned(),
                        score: score_b,
                        before: strong,
                        after: after_b,
                    },
                    RatingChange {
                        bot_id: "bot-z".to_owned(),
                        score: score_a,
                        before: INITIAL,
                        after: after_a,
                    },
                ],
                "{winner:?}"
            );
        }
    }

    #[test]
    fn a_plan_is_the_same_every_time() {
        let game = game("alice", "bob", [37, 61]);
        let first = settle(&game, Winner::B, 321, Some([INITIAL, INITIAL]));
        assert_eq!(
            first,
            settle(&game, Winner::B, 321, Some([INITIAL, INITIAL]))
        );
    }

    #[test]
    fn plans_applied_to_a_book_keep_every_invariant() {
        let mut book = Book::new();
        book.open(ISSUANCE_ACCOUNT, "issuance", true);
        book.open(HOUSE_ACCOUNT, "house", false);
        for owner in ["alice", "bob"] {
            book.open(&owner_account(owner), "owner", false);
            book.apply(
                &single(
                    &format!("grant:{owner}"),
                    ISSUANCE_ACCOUNT,
                    &owner_account(owner),
                    100,
                    "grant",
                ),
                0,
            )
            .expect("grant");
        }
        let game = game("alice", "bob", [60, 40]);
        book.open(&escrow_account(&game.id), "escrow", false);
        for stake in stakes(&game) {
            assert_eq!(
                book.apply(&stake, 1).expect("stake"),
                TransferOutcome::Created
            );
        }
        assert_eq!(
            book.account("owner:alice").map(Account::available),
            Some(40)
        );
        let plan = settle(&game, Winner::B, 500, None);
        for transfer in &plan.transfers {
            book.apply(transfer, 2).expect("settle");
        }
        // Applying a plan again changes nothing.
        for transfer in &plan.transfers {
            assert_eq!(
                book.apply(transfer, 3).expect("retry"),
                TransferOutcome::AlreadyExists
            );
        }
        assert!(matches!(
            book.apply(&returns(&game, "void")[0], 4),
            Err(CoreError::Conflict(_))
        ));
        assert_eq!(book.account("owner:bob").map(Account::available), Some(155));
        let report = book.check().expect("clean");
        assert_eq!((report.house_credits, report.pending_unresolved), (5, 0));
        let overdraft = TransferRequest {
            id: "stake:m2:a".to_owned(),
            op: TransferOp::Pending {
                debit: owner_account("alice"),
                credit: HOUSE_ACCOUNT.to_owned(),
                amount: 41,
            },
            memo: String::new(),
        };
        assert!(matches!(
            book.apply(&overdraft, 5),
            Err(CoreError::InsufficientCredits(_))
        ));
    }

    /// `deltas` is what applying the plan's transfers one by one does to
    /// every account: the store writes the one, the book does the other.
    #[test]
    fn a_plans_deltas_are_its_transfers_applied() {
        for winner in [Winner::A, Winner::B, Winner::Draw] {
            let mut book = Book::new();
            book.open(ISSUANCE_ACCOUNT, "issuance", true);
            book.open(HOUSE_ACCOUNT, "house", false);
            for owner in ["alice", "bob"] {
                book.open(&owner_account(owner), "owner", false);
                book.apply(
                    &single(
                        &format!("grant:{owner}"),
                        ISSUANCE_ACCOUNT,
                        &owner_account(owner),
                        100,
                        "grant",
                    ),
                    0,
                )
                .expect("grant");
            }
            let game = game("alice", "bob", [60, 40]);
            book.open(&escrow_account(&game.id), "escrow", false);
            for stake in stakes(&game) {
                book.apply(&stake, 1).expect("stake");
            }
            let plan = settle(&game, winner, 500, None);
            let mut expected: BTreeMap<String, Account> = book
                .accounts()
                .map(|account| (account.id.clone(), account.clone()))
                .collect();
            for (id, delta) in deltas(&game, &plan).expect("deltas") {
                let account = expected.get_mut(&id).expect("a known account");
                assert!(may_hold(account, delta), "{winner:?}: {id}");
                delta.apply_to(account);
            }
            for transfer in &plan.transfers {
                book.apply(transfer, 2).expect("settle");
            }
            let applied: BTreeMap<String, Account> = book
                .accounts()
                .map(|account| (account.id.clone(), account.clone()))
                .collect();
            assert_eq!(applied, expected, "{winner:?}");
        }
        let game = game("alice", "bob", [60, 40]);
        let mut plan = settle(&game, Winner::A, 500, None);
        plan.transfers.push(stakes(&game)[0].clone());
        assert!(matches!(deltas(&game, &plan), Err(CoreError::Corrupt(_))));
    }

    #[test]
    fn who_may_settle_as_a_table() {
        use MatchState::*;
        use SettleGate::*;
        let now = 1_000;
        let cases = [
            (Running, true, Some(now + 1), Settle),
            (Running, true, Some(now), Settle),
            (Running, true, Some(now - 1), LeaseLost),
            (Running, true, None, LeaseLost),
            (Running, false, Some(now + 1), LeaseLost),
            (Settled, true, None, Repeat),
            (Settled, false, None, LeaseLost),
            (Queued, true, Some(now + 1), LeaseLost),
            (Voided, true, Some(now + 1), LeaseLost),
        ];
        for (state, holds_lease, expires, gate) in cases {
            assert_eq!(
                may_settle(state, holds_lease, expires, now),
                gate,
                "{state:?} holds={holds_lease} expires={expires:?}"
            );
        }
    }

    #[test]
    fn who_may_void_as_a_table() {
        use MatchState::*;
        let now = 1_000;
        let cases = [
            (Running, true, Some(now + 1), true),
            (Running, true, Some(now), true),
            (Running, true, Some(now - 1), false),
            (Running, true, None, false),
            (Running, false, Some(now + 1), false),
            // A settled match is never voided, even by the lease that settled it.
            (Settled, true, None, false),
            (Settled, true, Some(now + 1), false),
            (Queued, true, Some(now + 1), false),
            (Voided, true, Some(now + 1), false),
        ];
        for (state, holds_lease, expires, voids) in cases {
            assert_eq!(
                may_void(state, holds_lease, expires, now),
                voids,
                "{state:?} holds={holds_lease} expires={expires:?}"
            );
        }
    }

    #[test]
    fn a_stake_is_one_to_the_most_one_transfer_moves() {
        for stake in [1, 25, MAX_TRANSFER_CREDITS] {
            assert!(check_stake(stake).is_ok(), "{stake}");
        }
        for stake in [i64::MIN, -1, 0, MAX_TRANSFER_CREDITS + 1, i64::MAX] {
            let error = check_stake(stake).expect_err("refused");
            assert!(
                matches!(&error, CoreError::Invalid(message) if message == &format!("stake must be 1 to {MAX_TRANSFER_CREDITS} credits")),
                "{stake}: {error:?}"
            );
        }
    }

    #[test]
    fn a_bot_is_short_of_its_stake_below_it_only() {
        assert_eq!(short_of_stake(25, 25), None);
        assert_eq!(short_of_stake(26, 25), None);
        assert_eq!(
            short_of_stake(10, 25).as_deref(),
            Some("balance 10 is below the stake 25")
        );
        assert_eq!(
            short_of_stake(-5, 1).as_deref(),
            Some("balance -5 is below the stake 1")
        );
    }
}
