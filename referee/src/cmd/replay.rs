//! The `referee replay …` subcommands that read, verify, publish and serve
//! replays: build the objects from the flags, call the libraries, format.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use duel_referee::publish::{self, LiveFeeds, PublishState, RateConfig, client};
use duel_referee::verify::verify_replay;
use duel_replays::store::ReplayStore;
use duel_replays::{
    MAX_REPLAY_BYTES, Replay, SignatureFailure, SignatureStatus, SigningKey, VerifyingKey,
    check_signature, parse_public_key, public_key_text,
};

use duel_plumbing::Shutdown;

use super::{Outcome, Stdout};
use crate::cli::{FetchArgs, ReplayServeArgs, SigningKeyArgs};
use crate::render::{self, Palette};

/// The environment variable naming the signing key file.
/// The environment variable naming the default replay service.
const SERVER_ENV: &str = "DUEL_REPLAY_SERVER";

fn is_url(source: &str) -> bool {
    source.starts_with("http://") || source.starts_with("https://")
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A replay file's bytes: a regular file, bounded, never waited on past the
/// read deadline (a FIFO or a device is refused, not read).
fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    duel_files::read_regular_within(path, MAX_REPLAY_BYTES, duel_files::READ_DEADLINE)
        .map_err(|error| anyhow::anyhow!("cannot read replay {error}"))
}

/// The bytes of a replay file or URL.
pub(super) fn load(source: &str) -> Result<Vec<u8>> {
    if is_url(source) {
        let http = client::http_client()?;
        Ok(runtime()?.block_on(client::fetch_replay(&http, source))?)
    } else {
        read_bounded(Path::new(source))
    }
}

/// A public key given as base64 text, or a file holding it.
fn public_key_arg(arg: &str) -> Result<VerifyingKey> {
    let path = Path::new(arg);
    if path.exists() {
        let bytes = duel_files::read_regular_within(
            path,
            duel_replays::MAX_KEY_FILE_BYTES,
            duel_files::READ_DEADLINE,
        )
        .map_err(|error| anyhow::anyhow!("cannot read public key {error}"))?;
        let text = String::from_utf8(bytes)
            .with_context(|| format!("public key file {} is not text", path.display()))?;
        return parse_public_key(&text)
            .with_context(|| format!("public key file {}", path.display()));
    }
    parse_public_key(arg)
        .context("--public-key is neither a readable file nor a base64 ed25519 key")
}

pub fn show(source: &str, palette: Palette, logs: bool) -> Result<Outcome> {
    let replay = Replay::from_slice(&load(source)?).with_context(|| format!("replay {source}"))?;
    Stdout::new().print(&render::replay(palette, &replay, logs))?;
    Ok(Outcome::Done)
}

/// The verdict of the two checks, in order.
enum Verdict {
    Verified {
        signature: SignatureStatus,
        verified: duel_replays::VerifiedMatch,
    },
    SignatureFails(SignatureFailure),
    RulesFail {
        signature: SignatureStatus,
        disagreement: duel_replays::Disagreement,
    },
    /// The replay verifies; the transcript given with it does not match
    /// the digests it signed.
    TranscriptFails {
        signature: SignatureStatus,
        disagreement: duel_replays::Disagreement,
    },
    /// The replay verifies, but not as a fork of the parent given with it.
    ForkFails {
        signature: SignatureStatus,
        disagreement: duel_replays::Disagreement,
    },
}

fn check(bytes: &[u8], replay: &Replay, expected: Option<&VerifyingKey>) -> Result<Verdict> {
    let signature = match check_signature(bytes, expected)? {
        Ok(status) => status,
        Err(failure) => return Ok(Verdict::SignatureFails(failure)),
    };
    Ok(match verify_replay(replay)? {
        Ok(verified) => Verdict::Verified {
            signature,
            verified,
        },
        Err(disagreement) => Verdict::RulesFail {
            signature,
            disagreement,
        },
    })
}

fn signature_text(status: &SignatureStatus) -> String {
    match status {
        SignatureStatus::Unsigned => "unsigned".to_owned(),
        SignatureStatus::Valid { key } => format!("signed by {key}"),
    }
}

fn signature_json(status: &SignatureStatus) -> serde_json::Value {
    match status {
        SignatureStatus::Unsigned => serde_json::json!({ "status": "unsigned" }),
        SignatureStatus::Valid { key } => serde_json::json!({ "status": "valid", "key": key }),
    }
}

fn winner_text(replay: &Replay, verified: &duel_replays::VerifiedMatch) -> String {
    match verified.result.winner.side() {
        Some(side) => format!("{} wins", render::safe(&replay.fighters[side.index()].name)),
        None => "drawn match".to_owned(),
    }
}

/// Prints a verdict; returns the outcome.
fn report(source: &str, replay: &Replay, verdict: &Verdict, json: bool) -> Result<Outcome> {
    report_fork(source, replay, verdict, json, false)
}

/// [`report`], saying for a fork whether its prefix was checked against its
/// parent (`--parent`).
fn report_fork(
    source: &str,
    replay: &Replay,
    verdict: &Verdict,
    json: bool,
    parent_checked: bool,
) -> Result<Outcome> {
    let mut stdout = Stdout::new();
    match verdict {
        Verdict::Verified {
            signature,
            verified,
        } => {
            if json {
                stdout.print(&format!(
                    "{}\n",
                    serde_json::json!({
                        "ok": true,
                        "path": source,
                        "signature": signature_json(signature),
                        "ruleset": verified.ruleset.version(),
                        "exchanges": verified.exchanges,
                        "winner": verified.result.winner.name(),
                        "substitutions": verified.substitutions,
                        "fork": replay.fork.as_ref().map(|fork| serde_json::json!({
                            "parent": fork.parent,
                            "parent_match_id": fork.parent_match_id,
                            "at": fork.at.to_string(),
                            "parent_checked": parent_checked,
                        })),
                    })
                ))?;
            } else {
                stdout.print(&format!(
                    "ok: {source} verifies under ruleset {} ({}): {} exchanges, {}, rounds {}–{}\n",
                    verified.ruleset,
                    signature_text(signature),
                    verified.exchanges,
                    winner_text(replay, verified),
                    verified.result.round_wins[0],
                    verified.result.round_wins[1],
                ))?;
                if let Some(fork) = &replay.fork {
                    stdout.print(&match parent_checked {
                        true => format!(
                            "    a fork of match {} at {}: its prefix is the parent's, byte for byte\n",
                            render::safe(&fork.parent_match_id),
                            fork.at
                        ),
                        false => format!(
                            "    a fork of match {} ({}) at {}: give --parent REPLAY to check its prefix\n",
                            render::safe(&fork.parent_match_id),
                            fork.parent,
                            fork.at
                        ),
                    })?;
                }
            }
            Ok(Outcome::Done)
        }
        Verdict::SignatureFails(failure) => {
            if json {
                stdout.print(&format!(
                    "{}\n",
                    serde_json::json!({
                        "ok": false, "path": source, "check": "signature", "detail": failure.to_string(),
                    })
                ))?;
            } else {
                eprintln!(
                    "referee: {source} does not verify: signature check failed: {}",
                    render::safe(&failure.to_string())
                );
            }
            Ok(Outcome::Negative)
        }
        Verdict::RulesFail {
            signature,
            disagreement,
        }
        | Verdict::TranscriptFails {
            signature,
            disagreement,
        }
        | Verdict::ForkFails {
            signature,
            disagreement,
        } => {
            let check = match verdict {
                Verdict::RulesFail { .. } => "rules",
                Verdict::ForkFails { .. } => "fork",
                _ => "transcript",
            };
            if json {
                stdout.print(&format!(
                    "{}\n",
                    serde_json::json!({
                        "ok": false,
                        "path": source,
                        "check": check,
                        "signature": signature_json(signature),
                        "location": disagreement.location.to_string(),
                        "detail": disagreement.detail,
                    })
                ))?;
            } else {
                eprintln!(
                    "referee: {source} does not verify: {check} check failed at {}",
                    render::safe(&disagreement.to_string())
                );
            }
            Ok(Outcome::Negative)
        }
    }
}

pub fn verify(
    source: &str,
    public_key: Option<&str>,
    transcript: Option<&Path>,
    parent: Option<&str>,
    json: bool,
) -> Result<Outcome> {
    let expected = public_key.map(public_key_arg).transpose()?;
    let bytes = load(source)?;
    let replay = Replay::from_slice(&bytes).with_context(|| format!("replay {source}"))?;
    let mut verdict = check(&bytes, &replay, expected.as_ref())?;
    if let (Some(parent), Verdict::Verified { signature, .. }) = (parent, &verdict) {
        if replay.fork.is_none() {
            bail!("{source} is not a fork (it names no parent), so --parent does not apply");
        }
        let parent_bytes = load(parent)?;
        if let Err(failure) = check_signature(&parent_bytes, None)? {
            bail!("parent {parent}: its signature fails ({failure})");
        }
        let parent_replay =
            Replay::from_slice(&parent_bytes).with_context(|| format!("parent {parent}"))?;
        if let Err(disagreement) = duel_replays::check_fork(&replay, &parent_replay) {
            verdict = Verdict::ForkFails {
                signature: signature.clone(),
                disagreement,
            };
        }
    }
    if let (Some(path), Verdict::Verified { signature, .. }) = (transcript, &verdict) {
        let parsed = duel_replays::transcript::ParsedTranscript::read(path)
            .with_context(|| format!("transcript {}", path.display()))?;
        if let Err(disagreement) = duel_replays::verify_transcript(&replay, &parsed) {
            verdict = Verdict::TranscriptFails {
                signature: signature.clone(),
                disagreement,
            };
        }
    }
    report_fork(source, &replay, &verdict, json, parent.is_some())
}

pub fn fetch(args: FetchArgs) -> Result<Outcome> {
    let (url, server) = if is_url(&args.source) {
        let server = args
            .server
            .clone()
            .or_else(|| client::server_of(&args.source));
        (args.source.clone(), server)
    } else {
        duel_replays::store::validate_id(&args.source)?;
        let server = args
            .server
            .clone()
            .or_else(|| {
                std::env::var(SERVER_ENV)
                    .ok()
                    .filter(|value| !value.is_empty())
            })
            .with_context(|| {
                format!(
                    "{} is an id: give --server URL or set {SERVER_ENV}",
                    args.source
                )
            })?;
        (client::replay_url(&server, &args.source), Some(server))
    };
    let http = client::http_client()?;
    let runtime = runtime()?;
    let expected = match (&args.public_key, &server) {
        (Some(key), _) => public_key_arg(key)?,
        (None, Some(server)) => runtime
            .block_on(client::fetch_public_key(&http, server))
            .context("cannot get the server's public key (give --public-key)")?,
        (None, None) => bail!("cannot tell the server of {url}: give --public-key or --server"),
    };
    let bytes = runtime.block_on(client::fetch_replay(&http, &url))?;
    let replay = Replay::from_slice(&bytes).with_context(|| format!("replay {url}"))?;
    let mut verdict = check(&bytes, &replay, Some(&expected))?;
    // The transcript is fetched and checked before anything is saved: a
    // transcript that disagrees with the signed replay leaves no file.
    let transcript = match (&verdict, args.transcript) {
        (Verdict::Verified { signature, .. }, true) => {
            let transcript_bytes = runtime.block_on(client::fetch_transcript(&http, &url))?;
            let parsed = duel_replays::transcript::ParsedTranscript::from_slice(&transcript_bytes)
                .with_context(|| format!("the transcript of {url}"))?;
            match duel_replays::verify_transcript(&replay, &parsed) {
                Ok(()) => Some((transcript_bytes, parsed.transcript.decisions.len())),
                Err(disagreement) => {
                    verdict = Verdict::TranscriptFails {
                        signature: signature.clone(),
                        disagreement,
                    };
                    None
                }
            }
        }
        _ => None,
    };
    if !matches!(verdict, Verdict::Verified { .. }) {
        return report(&url, &replay, &verdict, false);
    }
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.json", replay.match_id)));
    duel_replays::store::validate_id(&replay.match_id)?;
    duel_files::write_atomic(&out, &bytes, duel_files::WriteOptions::PUBLIC)
        .map_err(|error| anyhow::anyhow!("cannot write {error}"))?;
    report(&url, &replay, &verdict, false)?;
    Stdout::new().print(&format!("saved to {}\n", out.display()))?;
    if let Some((transcript_bytes, decisions)) = transcript {
        let out = args
            .transcript_out
            .unwrap_or_else(|| PathBuf::from(format!("{}.transcript.json", replay.match_id)));
        duel_files::write_atomic(&out, &transcript_bytes, duel_files::WriteOptions::PUBLIC)
            .map_err(|error| anyhow::anyhow!("cannot write {error}"))?;
        Stdout::new().print(&format!(
            "transcript: {decisions} decisions agree with the signed replay; saved to {}\n",
            out.display()
        ))?;
    }
    Ok(Outcome::Done)
}

pub fn signing_key(args: &SigningKeyArgs) -> Result<SigningKey> {
    Ok(duel_plumbing::signing_key::load(
        args.signing_key.as_deref(),
        "referee",
    )?)
}

pub fn serve(args: ReplayServeArgs) -> Result<Outcome> {
    let key = signing_key(&args.key)?;
    let shutdown = Shutdown::install()?;
    let runtime = runtime()?;
    runtime.block_on(async {
        let store = ReplayStore::open(&args.store)?;
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener
            .local_addr()
            .context("cannot read the listening address")?;
        eprintln!(
            "referee: serving replays from {} on http://{address} (public key {})",
            store.description(),
            public_key_text(&key.verifying_key())
        );
        let state = PublishState::new(
            store,
            key.verifying_key(),
            LiveFeeds::new(),
            RateConfig::default(),
        );
        publish::serve(
            listener,
            state,
            publish::HttpLimits::default(),
            async move { shutdown.wait().await },
        )
        .await
        .context("the replay service stopped")
    })?;
    Ok(Outcome::Done)
}

pub fn put(store_url: &str, paths: &[PathBuf]) -> Result<Outcome> {
    let runtime = runtime()?;
    let store = ReplayStore::open(store_url)?;
    let mut stdout = Stdout::new();
    for path in paths {
        let bytes = read_bounded(path)?;
        let meta = runtime
            .block_on(store.put_json(&bytes))
            .with_context(|| format!("cannot publish {}", path.display()))?;
        stdout.print(&format!(
            "{}  {} vs {}  {}\n",
            render::safe(&meta.id),
            render::safe(&meta.fighters[0].name),
            render::safe(&meta.fighters[1].name),
            if meta.signed { "signed" } else { "unsigned" }
        ))?;
    }
    Ok(Outcome::Done)
}

pub fn sign(path: &Path, out: Option<&Path>, key_args: &SigningKeyArgs) -> Result<Outcome> {
    let key = signing_key(key_args)?;
    let mut replay = Replay::read(path)?;
    duel_replays::sign(&mut replay, &key)
        .with_context(|| format!("cannot sign {}", path.display()))?;
    let out = out.unwrap_or(path);
    replay.write(out)?;
    Stdout::new().print(&format!(
        "signed {} with key {}\n",
        out.display(),
        public_key_text(&key.verifying_key())
    ))?;
    Ok(Outcome::Done)
}
