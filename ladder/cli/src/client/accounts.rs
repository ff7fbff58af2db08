//! `ladder account create` and `ladder account whoami`.

use std::path::PathBuf;

use clap::Subcommand;
use duel_proto::v1 as pb;
use serde_json::json;

use super::{Client, ClientError, Result, emit, json_line, required, write_secret};

#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Create a bot owner (operator); prints its token once, or writes it to --out.
    Create {
        name: String,
        /// Write the new token to this file (created, mode 0600) instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Show the account behind the token.
    Whoami {
        #[arg(long)]
        json: bool,
    },
}

pub(super) async fn run(client: &mut Client, command: AccountCommand) -> Result<()> {
    match command {
        AccountCommand::Create { name, out } => create(client, name, out).await,
        AccountCommand::Whoami { json } => whoami(client, json).await,
    }
}

/// `ladder account create NAME [--out PATH]`.
async fn create(client: &mut Client, name: String, out: Option<PathBuf>) -> Result<()> {
    let reply = client
        .call(
            pb::LadderCreateOwnerRequest { name },
            |mut inner, request| async move { inner.create_owner(request).await },
        )
        .await?;
    let created = Created::from_reply(reply)?;
    if let Some(path) = &out {
        write_secret(path, &created.token)?;
    }
    emit(&created.render(out.as_deref()));
    Ok(())
}

/// A created owner: its name and its token, shown or stored once.
#[derive(Debug)]
struct Created {
    name: String,
    token: String,
}

impl Created {
    fn from_reply(reply: pb::LadderCreateOwnerResponse) -> Result<Created> {
        let account = required(reply.account, "account")?;
        // A new account always has a token; an empty one is an absent one.
        if reply.token.is_empty() {
            return Err(ClientError::MissingField("token"));
        }
        Ok(Created {
            name: account.name,
            token: reply.token,
        })
    }

    /// The text printed: the token itself unless it went to `out`.
    fn render(&self, out: Option<&std::path::Path>) -> String {
        match out {
            Some(path) => format!(
                "owner {} created; token written to {}\n",
                self.name,
                path.display()
            ),
            None => format!(
                "owner {} created; token (shown once):\n{}\n",
                self.name, self.token
            ),
        }
    }
}

/// `ladder account whoami [--json]`.
async fn whoami(client: &mut Client, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderWhoamiRequest {},
            |mut inner, request| async move { inner.whoami(request).await },
        )
        .await?;
    emit(&render_whoami(reply, json)?);
    Ok(())
}

fn render_whoami(reply: pb::LadderWhoamiResponse, json: bool) -> Result<String> {
    let account = required(reply.account, "account")?;
    // A role this client does not know (a newer server's) reads as unknown.
    let role = match account.role() {
        pb::LadderRole::Operator => "operator",
        pb::LadderRole::Owner => "owner",
        pb::LadderRole::Unspecified => "unknown",
    };
    Ok(if json {
        json_line(&json!({ "id": account.id, "name": account.name, "role": role }))
    } else {
        format!("{} ({role})\n", account.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> pb::LadderAccount {
        pb::LadderAccount {
            id: "u1".into(),
            name: "alice".into(),
            role: pb::LadderRole::Owner.into(),
        }
    }

    #[test]
    fn whoami_renders_text_and_json() {
        let reply = || pb::LadderWhoamiResponse {
            account: Some(alice()),
        };
        assert_eq!(
            render_whoami(reply(), false).expect("text"),
            "alice (owner)\n"
        );
        assert_eq!(
            render_whoami(reply(), true).expect("json"),
            "{\"id\":\"u1\",\"name\":\"alice\",\"role\":\"owner\"}\n"
        );
    }

    #[test]
    fn a_reply_without_its_account_is_an_error() {
        let error = render_whoami(pb::LadderWhoamiResponse { account: None }, false)
            .expect_err("no account");
        assert_eq!(error.to_string(), "the ladder's reply has no `account`");
        let error = Created::from_reply(pb::LadderCreateOwnerResponse {
            account: None,
            token: "secret".into(),
        })
        .expect_err("no account");
        assert_eq!(error.to_string(), "the ladder's reply has no `account`");
        let error = Created::from_reply(pb::LadderCreateOwnerResponse {
            account: Some(alice()),
            token: String::new(),
        })
        .expect_err("no token");
        assert_eq!(error.to_string(), "the ladder's reply has no `token`");
    }

    #[test]
    fn a_created_owner_shows_its_token_once_or_names_the_file() {
        let created = Created::from_reply(pb::LadderCreateOwnerResponse {
            account: Some(alice()),
            token: "secret".into(),
        })
        .expect("created");
        assert_eq!(
            created.render(None),
            "owner alice created; token (shown once):\nsecret\n"
        );
        assert_eq!(
            created.render(Some(std::path::Path::new("alice.token"))),
            "owner alice created; token written to alice.token\n"
        );
    }
}
