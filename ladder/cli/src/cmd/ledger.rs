//! `ladder ledger check`: every ledger invariant, read from the database
//! directly (`--db`) or asked of the server; exit 1 names the first violation.

use anyhow::{Context, Result};
use duel_ladder::Store;
use duel_plumbing::Outcome;

use crate::cli::LedgerCommand;
use crate::client::{self, Connection};

pub async fn run(connection: Connection, command: LedgerCommand) -> Result<Outcome> {
    let LedgerCommand::Check { db, json } = command;
    let Some(db) = db else {
        return Ok(super::verdict(
            client::ledger_check(connection, json).await?,
        ));
    };
    let store = Store::connect(&db)
        .await
        .with_context(|| format!("opening {db}"))?;
    let checked = store.ledger_check().await?;
    let ok = checked.is_ok();
    client::print_ledger(json, checked);
    Ok(super::verdict(ok))
}
