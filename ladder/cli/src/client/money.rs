//! Credits, the rake, balances and the ledger check: `ladder credits grant`,
//! `ladder rake set`, `ladder balance` and `ladder ledger check` (the remote
//! one; [`print_ledger`] also renders the local `--db` check).

use clap::Subcommand;
use duel_ladder::ledger::LedgerReport;
use duel_proto::v1 as pb;
use serde_json::json;

use super::{Client, ClientError, Result, emit, json_line};

#[derive(Debug, Subcommand)]
pub enum CreditsCommand {
    /// Grant credits to an owner (operator).
    Grant {
        owner: String,
        amount: i64,
        /// Transfer id for a safe retry; default: a fresh one.
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum RakeCommand {
    /// Set the rake in basis points of the pot, e.g. 500 = 5% (operator).
    Set { basis_points: i64 },
}

pub(super) async fn credits(client: &mut Client, command: CreditsCommand) -> Result<()> {
    match command {
        CreditsCommand::Grant { owner, amount, id } => grant(client, owner, amount, id).await,
    }
}

pub(super) async fn rake(client: &mut Client, command: RakeCommand) -> Result<()> {
    match command {
        RakeCommand::Set { basis_points } => set_rake(client, basis_points).await,
    }
}

/// How often a grant is sent again, with the same transfer id, when the
/// ladder could not be reached: the id makes every retry a no-op once one
/// attempt has been applied.
const GRANT_ATTEMPTS: u32 = 3;
/// The wait before the first retry, doubled before each next one.
const GRANT_RETRY_BACKOFF: std::time::Duration = std::time::Duration::from_millis(250);

/// `ladder credits grant OWNER AMOUNT [--id TRANSFER_ID]`. Without `--id` the
/// client makes one; it is the same on every retry, so a grant is applied at
/// most once however often it is sent.
async fn grant(client: &mut Client, owner: String, amount: i64, id: Option<String>) -> Result<()> {
    let transfer_id = id.unwrap_or_else(new_transfer_id);
    let mut backoff = GRANT_RETRY_BACKOFF;
    let mut attempt = 1;
    let reply = loop {
        let message = pb::LadderGrantCreditsRequest {
            owner: owner.clone(),
            amount,
            transfer_id: transfer_id.clone(),
        };
        let sent = client
            .call(message, |mut inner, request| async move {
                inner.grant_credits(request).await
            })
            .await;
        match sent {
            Ok(reply) => break reply,
            Err(ClientError::Unavailable(_)) if attempt < GRANT_ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            // Whether it was applied is unknown: say how to find out without
            // risking a second grant.
            Err(ClientError::Unavailable(reason)) => {
                return Err(ClientError::Unavailable(format!(
                    "{reason}; run again with --id {transfer_id} to apply it at most once"
                )));
            }
            Err(other) => return Err(other),
        }
    };
    emit(&render_grant(&reply, &owner, amount)?);
    Ok(())
}

/// A fresh transfer id for one grant.
fn new_transfer_id() -> String {
    format!("grant:{}", uuid::Uuid::new_v4().simple())
}

fn render_grant(
    reply: &pb::LadderGrantCreditsResponse,
    owner: &str,
    amount: i64,
) -> Result<String> {
    // The server always names the transfer it applied.
    if reply.transfer_id.is_empty() {
        return Err(ClientError::MissingField("transfer_id"));
    }
    Ok(if reply.already_applied {
        format!(
            "transfer {} was already applied; nothing changed\n",
            reply.transfer_id
        )
    } else {
        format!(
            "granted {amount} credits to {owner} (transfer {})\n",
            reply.transfer_id
        )
    })
}

/// `ladder rake set BASIS_POINTS`.
async fn set_rake(client: &mut Client, basis_points: i64) -> Result<()> {
    client
        .call(
            pb::LadderSetRakeRequest {
                rake_bp: basis_points,
            },
            |mut inner, request| async move { inner.set_rake(request).await },
        )
        .await?;
    emit(&format!("rake set to {basis_points} basis points\n"));
    Ok(())
}

/// `ladder balance [ACCOUNT] [--json]`.
pub(super) async fn balance(
    client: &mut Client,
    account: Option<String>,
    json: bool,
) -> Result<()> {
    let message = pb::LadderBalanceRequest {
        // No account: empty, which the server reads as the caller's own.
        account: account.unwrap_or_default(),
    };
    let reply = client
        .call(message, |mut inner, request| async move {
            inner.balance(request).await
        })
        .await?;
    emit(&render_balance(&reply, json)?);
    Ok(())
}

fn render_balance(reply: &pb::LadderBalanceResponse, json: bool) -> Result<String> {
    // The server always names the account it read.
    if reply.account.is_empty() {
        return Err(ClientError::MissingField("account"));
    }
    Ok(if json {
        json_line(&json!({ "account": reply.account, "available": reply.available }))
    } else {
        format!("{}: {} credits available\n", reply.account, reply.available)
    })
}

/// `ladder ledger check` through the server; false when a violation was found.
pub async fn ledger_check(connection: super::Connection, json: bool) -> Result<bool> {
    let mut client = Client::connect(&connection).await?;
    let report = client
        .call(
            pb::LadderCheckLedgerRequest {},
            |mut inner, request| async move { inner.check_ledger(request).await },
        )
        .await?;
    let verdict = if report.ok {
        Ok(LedgerReport {
            accounts: report.accounts,
            transfers: report.transfers,
            pending_unresolved: report.pending_unresolved,
            credits_in_circulation: report.credits_in_circulation,
            house_credits: report.house_credits,
        })
    } else if report.violation.is_empty() {
        // A failed check always names its first violation.
        return Err(ClientError::MissingField("violation"));
    } else {
        Err(report.violation)
    };
    print_ledger(json, verdict);
    Ok(report.ok)
}

/// The one rendering of a ledger check, local or remote: on stdout, except a
/// violation in text, which goes to stderr.
pub fn print_ledger(json: bool, verdict: Result<LedgerReport, impl std::fmt::Display>) {
    match verdict {
        Ok(LedgerReport {
            accounts,
            transfers,
            pending_unresolved,
            credits_in_circulation,
            house_credits,
        }) if json => emit(&json_line(&json!({
            "ok": true,
            "accounts": accounts,
            "transfers": transfers,
            "pending_unresolved": pending_unresolved,
            "credits_in_circulation": credits_in_circulation,
            "house_credits": house_credits,
        }))),
        Ok(LedgerReport {
            accounts,
            transfers,
            pending_unresolved,
            credits_in_circulation,
            house_credits,
        }) => emit(&format!(
            "ledger clean: {accounts} accounts, {transfers} transfers, {pending_unresolved} stakes in escrow, {credits_in_circulation} credits in circulation, house {house_credits}\n"
        )),
        Err(violation) if json => emit(&json_line(
            &json!({ "ok": false, "violation": violation.to_string() }),
        )),
        Err(violation) => eprintln!("ledger check failed: {violation}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_names_its_transfer() {
        let reply = pb::LadderGrantCreditsResponse {
            transfer_id: "t1".into(),
            already_applied: false,
        };
        assert_eq!(
            render_grant(&reply, "bob", 100).expect("text"),
            "granted 100 credits to bob (transfer t1)\n"
        );
        let again = pb::LadderGrantCreditsResponse {
            already_applied: true,
            ..reply
        };
        assert_eq!(
            render_grant(&again, "bob", 100).expect("text"),
            "transfer t1 was already applied; nothing changed\n"
        );
        let error = render_grant(&pb::LadderGrantCreditsResponse::default(), "bob", 100)
            .expect_err("no transfer id");
        assert_eq!(error.to_string(), "the ladder's reply has no `transfer_id`");
    }

    #[test]
    fn a_balance_names_its_account() {
        let reply = pb::LadderBalanceResponse {
            account: "bob".into(),
            available: 0,
        };
        assert_eq!(
            render_balance(&reply, false).expect("text"),
            "bob: 0 credits available\n"
        );
        assert_eq!(
            render_balance(&reply, true).expect("json"),
            "{\"account\":\"bob\",\"available\":0}\n"
        );
        let error =
            render_balance(&pb::LadderBalanceResponse::default(), false).expect_err("no account");
        assert_eq!(error.to_string(), "the ladder's reply has no `account`");
    }
}
