//! `ladder bot register|version|list|show|edit`: the bots registry, a
//! bot's profile, and the renderings of a bot.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use duel_ladder::limits::MAX_WASM_BYTES;
use duel_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Client, ClientError, Result, emit, json_line, required};

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct SourceArgs {
    /// A built-in bot spec, e.g. builtin:counter.
    #[arg(long)]
    builtin: Option<String>,
    /// A WASM component file of the duel:bot world.
    #[arg(long)]
    wasm: Option<PathBuf>,
    /// An endpoint bot's URL.
    #[arg(long)]
    endpoint: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BotCommand {
    /// Register a bot (owner).
    Register {
        name: String,
        /// light, middle or heavy.
        #[arg(long)]
        class: String,
        #[command(flatten)]
        source: SourceArgs,
        #[arg(long)]
        json: bool,
    },
    /// Add a version to one of your bots (owner).
    Version {
        name: String,
        #[command(flatten)]
        source: SourceArgs,
        #[arg(long)]
        json: bool,
    },
    /// Your bots (all bots for an operator).
    List {
        #[arg(long)]
        json: bool,
    },
    /// One bot with its versions and whether it plays continuously.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Play one of your bots continuously at STAKE a match, until you
    /// deactivate it, your balance no longer covers the stake (it is paused)
    /// or the season ends (owner). Again: a new stake, or resume a paused bot.
    Activate {
        name: String,
        #[arg(long)]
        stake: i64,
        #[arg(long)]
        json: bool,
    },
    /// Stop one of your bots playing continuously; a match already made is
    /// still played (owner).
    Deactivate {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Set what the site shows about one of your bots (owner). Give any of
    /// the three; an empty value clears it. Plain text, no line breaks.
    #[command(group(clap::ArgGroup::new("profile").required(true).multiple(true)))]
    Edit {
        name: String,
        /// A line about the bot (at most 280 characters).
        #[arg(long, group = "profile")]
        description: Option<String>,
        /// Who wrote it (at most 64 characters).
        #[arg(long, group = "profile")]
        author: Option<String>,
        /// An http(s) link to its source.
        #[arg(long = "source", value_name = "URL", group = "profile")]
        source_url: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub(super) async fn run(client: &mut Client, command: BotCommand) -> Result<()> {
    match command {
        BotCommand::Register {
            name,
            class,
            source,
            json,
        } => register(client, name, class, source, json).await,
        BotCommand::Version { name, source, json } => version(client, name, source, json).await,
        BotCommand::List { json } => list(client, json).await,
        BotCommand::Show { name, json } => show(client, name, json).await,
        BotCommand::Activate { name, stake, json } => activate(client, name, stake, json).await,
        BotCommand::Deactivate { name, json } => deactivate(client, name, json).await,
        BotCommand::Edit {
            name,
            description,
            author,
            source_url,
            json,
        } => {
            let request = pb::LadderEditBotRequest {
                bot: name,
                description,
                author,
                source_url,
            };
            edit(client, request, json).await
        }
    }
}

/// `ladder bot edit NAME [--description TEXT] [--author TEXT] [--source URL] [--json]`.
async fn edit(client: &mut Client, request: pb::LadderEditBotRequest, json: bool) -> Result<()> {
    let reply = client
        .call(request, |mut inner, request| async move {
            inner.edit_bot(request).await
        })
        .await?;
    let bot = required(reply.bot, "bot")?;
    emit(&if json {
        json_line(&bot_json(&bot))
    } else {
        format!("{}\n{}", bot.name, profile_text(&bot))
    });
    Ok(())
}

/// The profile's lines, each indented; `(none)` where unset.
fn profile_text(bot: &pb::LadderBot) -> String {
    let or_none = |text: &str| {
        if text.is_empty() {
            "(none)".to_owned()
        } else {
            text.to_owned()
        }
    };
    format!(
        "  description: {}\n  author: {}\n  source: {}\n",
        or_none(&bot.description),
        or_none(&bot.author),
        or_none(&bot.source_url)
    )
}

/// `ladder bot activate NAME --stake N [--json]`.
async fn activate(client: &mut Client, name: String, stake: i64, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderActivateBotRequest { bot: name, stake },
            |mut inner, request| async move { inner.activate_bot(request).await },
        )
        .await?;
    emit(&render_play_change(reply.bot, json)?);
    Ok(())
}

/// `ladder bot deactivate NAME [--json]`.
async fn deactivate(client: &mut Client, name: String, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderDeactivateBotRequest { bot: name },
            |mut inner, request| async move { inner.deactivate_bot(request).await },
        )
        .await?;
    emit(&render_play_change(reply.bot, json)?);
    Ok(())
}

fn render_play_change(bot: Option<pb::LadderBot>, json: bool) -> Result<String> {
    let bot = required(bot, "bot")?;
    Ok(if json {
        json_line(&bot_json(&bot))
    } else {
        format!("{}: {}\n", bot.name, play_text(&bot))
    })
}

/// `active, stake 25`, `paused: balance 10 is below the stake 25`, `inactive`.
fn play_text(bot: &pb::LadderBot) -> String {
    match bot.play.as_str() {
        "active" => format!("active, stake {}", bot.active_stake),
        "paused" => format!("paused: {}", bot.paused_reason),
        "" => "inactive".to_owned(),
        other => other.to_owned(),
    }
}

/// `ladder bot register NAME --class CLASS SOURCE [--json]`.
async fn register(
    client: &mut Client,
    name: String,
    class: String,
    source: SourceArgs,
    json: bool,
) -> Result<()> {
    let reply = client
        .call(
            pb::LadderRegisterBotRequest {
                name,
                weight_class: class,
                source: Some(bot_source(source)?),
            },
            |mut inner, request| async move { inner.register_bot(request).await },
        )
        .await?;
    emit(&render_registered(reply.bot, json)?);
    Ok(())
}

fn render_registered(bot: Option<pb::LadderBot>, json: bool) -> Result<String> {
    let bot = required(bot, "bot")?;
    Ok(if json {
        json_line(&bot_json(&bot))
    } else {
        format!("registered {} version {}\n", bot.name, bot.current_version)
    })
}

/// `ladder bot version NAME SOURCE [--json]`.
async fn version(client: &mut Client, name: String, source: SourceArgs, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderNewBotVersionRequest {
                name,
                source: Some(bot_source(source)?),
            },
            |mut inner, request| async move { inner.new_bot_version(request).await },
        )
        .await?;
    emit(&render_new_version(reply.bot, json)?);
    Ok(())
}

fn render_new_version(bot: Option<pb::LadderBot>, json: bool) -> Result<String> {
    let bot = required(bot, "bot")?;
    Ok(if json {
        json_line(&bot_json(&bot))
    } else {
        format!("{} is now at version {}\n", bot.name, bot.current_version)
    })
}

/// `ladder bot list [--json]`.
async fn list(client: &mut Client, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderListBotsRequest {},
            |mut inner, request| async move { inner.list_bots(request).await },
        )
        .await?;
    emit(&render_list(&reply.bots, json));
    Ok(())
}

fn render_list(bots: &[pb::LadderBot], json: bool) -> String {
    if json {
        json_line(&Value::Array(bots.iter().map(bot_json).collect()))
    } else {
        // One line per bot, with its play state (and why it is paused).
        bots.iter()
            .map(|bot| {
                let line = bot_line(bot);
                format!("{}: {}\n", line.trim_end(), play_text(bot))
            })
            .collect()
    }
}

/// `ladder bot show NAME [--json]`.
async fn show(client: &mut Client, name: String, json: bool) -> Result<()> {
    let reply = client
        .call(
            pb::LadderShowBotRequest { name },
            |mut inner, request| async move { inner.show_bot(request).await },
        )
        .await?;
    emit(&render_show(reply.bot, json)?);
    Ok(())
}

fn render_show(bot: Option<pb::LadderBot>, json: bool) -> Result<String> {
    let bot = required(bot, "bot")?;
    if json {
        return Ok(json_line(&bot_json(&bot)));
    }
    let mut text = bot_line(&bot);
    text.push_str(&format!("  play: {}\n", play_text(&bot)));
    if !(bot.description.is_empty() && bot.author.is_empty() && bot.source_url.is_empty()) {
        text.push_str(&profile_text(&bot));
    }
    for version in &bot.versions {
        // A WASM version's spec is its digest: said once.
        let source = if version.spec == version.digest {
            version.digest.clone()
        } else {
            format!("{} {}", version.spec, version.digest)
        };
        text.push_str(&format!(
            "  v{} {} {} (added {})\n",
            version.version,
            version.kind,
            source,
            duel_ladder_core::model::utc_text(version.created_ms)
        ));
    }
    Ok(text)
}

/// The request's bot source from the one source flag given (clap allows exactly one).
fn bot_source(args: SourceArgs) -> Result<pb::LadderBotSource> {
    use pb::ladder_bot_source::Source;
    let source = if let Some(spec) = args.builtin {
        Source::Builtin(spec)
    } else if let Some(url) = args.endpoint {
        Source::EndpointUrl(url)
    } else if let Some(path) = args.wasm {
        // A regular file only, at most the cap, within the read deadline:
        // never /dev/zero, a FIFO or a file that streams.
        let bytes = duel_files::read_regular_within(
            &path,
            MAX_WASM_BYTES as u64,
            duel_files::READ_DEADLINE,
        )
        .map_err(|error| match error {
            duel_files::FileError::TooLarge { size_bytes, .. } => ClientError::WasmTooBig {
                path: path.clone(),
                size: size_bytes,
                cap: MAX_WASM_BYTES,
            },
            other => ClientError::File(format!("cannot read the WASM file {other}")),
        })?;
        Source::Wasm(bytes)
    } else {
        return Err(ClientError::NoSource);
    };
    Ok(pb::LadderBotSource {
        source: Some(source),
    })
}

/// A bot's one-line summary.
fn bot_line(bot: &pb::LadderBot) -> String {
    format!(
        "{} (owner {}, class {}, version {})\n",
        bot.name, bot.owner, bot.weight_class, bot.current_version
    )
}

fn bot_json(bot: &pb::LadderBot) -> Value {
    json!({
        "id": bot.id,
        "name": bot.name,
        "owner": bot.owner,
        "class": bot.weight_class,
        "current_version": bot.current_version,
        "play": if bot.play.is_empty() { "inactive" } else { bot.play.as_str() },
        "active_stake": (bot.active_stake > 0).then_some(bot.active_stake),
        "active_since_ms": (bot.active_since_ms > 0).then_some(bot.active_since_ms),
        "paused_reason": (!bot.paused_reason.is_empty()).then_some(bot.paused_reason.as_str()),
        "description": (!bot.description.is_empty()).then_some(bot.description.as_str()),
        "author": (!bot.author.is_empty()).then_some(bot.author.as_str()),
        "source_url": (!bot.source_url.is_empty()).then_some(bot.source_url.as_str()),
        "versions": bot.versions.iter().map(|version| json!({
            "version": version.version,
            "kind": version.kind,
            "spec": version.spec,
            "digest": version.digest,
            "created_ms": version.created_ms,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> pb::LadderBot {
        pb::LadderBot {
            weight_class_enum: pb::WeightClass::Light as i32,
            id: "b1".into(),
            name: "counter".into(),
            owner: "alice".into(),
            weight_class: "light".into(),
            current_version: 2,
            play: "inactive".into(),
            play_enum: pb::LadderBotPlay::Inactive as i32,
            active_stake: 0,
            active_since_ms: 0,
            paused_reason: String::new(),
            description: String::new(),
            author: String::new(),
            source_url: String::new(),
            versions: vec![pb::LadderBotVersion {
                version: 1,
                kind: "builtin".into(),
                kind_enum: pb::LadderBotKind::Builtin as i32,
                spec: "builtin:counter".into(),
                digest: "d1".into(),
                created_ms: 5,
            }],
        }
    }

    #[test]
    fn a_bot_renders_as_text_and_json() {
        assert_eq!(
            render_show(Some(counter()), false).expect("text"),
            "counter (owner alice, class light, version 2)\n  play: inactive\n  v1 builtin builtin:counter d1 (added 1970-01-01 00:00:00 UTC)\n"
        );
        let mut wasm = counter();
        wasm.versions[0].kind = "wasm".into();
        wasm.versions[0].spec = "sha256:ab".into();
        wasm.versions[0].digest = "sha256:ab".into();
        let text = render_show(Some(wasm), false).expect("text");
        assert_eq!(text.matches("sha256:ab").count(), 1, "{text}");
        assert_eq!(
            render_registered(Some(counter()), false).expect("text"),
            "registered counter version 2\n"
        );
        assert_eq!(
            render_new_version(Some(counter()), false).expect("text"),
            "counter is now at version 2\n"
        );
        assert_eq!(
            render_show(Some(counter()), true).expect("json"),
            "{\"active_since_ms\":null,\"active_stake\":null,\"author\":null,\"class\":\"light\",\"current_version\":2,\
             \"description\":null,\"id\":\"b1\",\"name\":\"counter\",\
             \"owner\":\"alice\",\"paused_reason\":null,\"play\":\"inactive\",\"source_url\":null,\"versions\":[{\"created_ms\":5,\"digest\":\"d1\",\
             \"kind\":\"builtin\",\"spec\":\"builtin:counter\",\"version\":1}]}\n"
        );
        assert_eq!(render_list(&[], false), "");
        let paused = pb::LadderBot {
            play: "paused".into(),
            active_stake: 25,
            paused_reason: "balance 10 is below the stake 25".into(),
            ..counter()
        };
        assert_eq!(
            render_list(&[counter(), paused], false),
            "counter (owner alice, class light, version 2): inactive\n\
             counter (owner alice, class light, version 2): paused: balance 10 is below the stake 25\n"
        );
        assert_eq!(render_list(&[], true), "[]\n");
    }

    #[test]
    fn a_paused_bot_says_why() {
        let paused = pb::LadderBot {
            play: "paused".into(),
            active_stake: 25,
            active_since_ms: 7,
            paused_reason: "balance 10 is below the stake 25".into(),
            ..counter()
        };
        assert_eq!(
            render_play_change(Some(paused.clone()), false).expect("text"),
            "counter: paused: balance 10 is below the stake 25\n"
        );
        let value: Value =
            serde_json::from_str(&render_show(Some(paused), true).expect("json")).expect("json");
        assert_eq!(value["play"], "paused");
        assert_eq!(value["active_stake"], 25);
        assert_eq!(value["paused_reason"], "balance 10 is below the stake 25");
    }

    #[test]
    fn a_reply_without_its_bot_is_an_error() {
        for render in [render_show, render_registered, render_new_version] {
            let error = render(None, true).expect_err("no bot");
            assert_eq!(error.to_string(), "the ladder's reply has no `bot`");
        }
    }
}
