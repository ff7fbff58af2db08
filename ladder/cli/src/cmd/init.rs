//! `ladder init`: the database (migrations run), its first operator with a
//! token written to a private file, and optionally the signing key.

use anyhow::{Context, Result};
use duel_ladder::Store;
use duel_plumbing::Outcome;

use super::say;
use crate::cli::InitArgs;
use crate::client;

pub async fn run(args: InitArgs) -> Result<Outcome> {
    if let Some(path) = &args.signing_key {
        let (key, created) = duel_replays::load_or_create_signing_key(path)?;
        say!(
            "signing key {} {} (public key {})",
            path.display(),
            if created { "created" } else { "exists" },
            duel_replays::public_key_text(&key.verifying_key())
        );
    }
    let store = Store::connect(&args.db)
        .await
        .with_context(|| format!("opening {}", args.db))?;
    match store.bootstrap_operator(&args.operator).await? {
        Some((user, token)) => {
            client::write_secret(&args.token_file, &token)?;
            say!(
                "operator {} created; token written to {}",
                user.name,
                args.token_file.display()
            );
        }
        None => say!("an operator exists already; nothing created"),
    }
    Ok(Outcome::Done)
}
