//! `referee replay sign|verify|fetch|show|put` as a user runs them: the real
//! binary, real files, a real replay service on loopback.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use duel_referee::publish::RateConfig;
use duel_replays::store::ReplayStore;
use duel_replays::{SigningKey, public_key_text};
use duel_rules::WeightClass;

fn referee(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .env_remove("DUEL_SIGNING_KEY_FILE")
        .env_remove("DUEL_REPLAY_SERVER")
        .output()
        .expect("run referee")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// A real match written by `referee local`, signed by `referee replay sign`
/// with the key file `key` (created on first use).
fn signed_replay(folder: &Path, name: &str, key: &Path) -> PathBuf {
    let path = folder.join(name);
    let local = referee(&[
        "local",
        "builtin:random",
        "builtin:counter",
        "--seed",
        "11",
        "--replay",
        arg(&path),
    ]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    let sign = referee(&["replay", "sign", arg(&path), "--signing-key", arg(key)]);
    assert!(sign.status.success(), "{}", text(&sign.stderr));
    path
}

fn public_key_of(key: &Path) -> String {
    let (key, _) = duel_replays::load_or_create_signing_key(key).expect("key");
    public_key_text(&key.verifying_key())
}

/// Changes fighter a's hp in round 1, exchange 3 by one.
fn tamper(path: &Path, out: &Path) {
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    let hp = &mut value["rounds"][0]["exchanges"][2]["a"]["hp"];
    *hp = serde_json::json!(hp.as_i64().expect("hp") + 1);
    std::fs::write(out, serde_json::to_vec_pretty(&value).expect("json")).expect("write");
}

#[test]
fn a_signed_replay_verifies_and_names_its_key() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let replay = signed_replay(folder.path(), "match.json", &key);
    let public = public_key_of(&key);
    let verify = referee(&["replay", "verify", arg(&replay), "--public-key", &public]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    assert!(
        text(&verify.stdout).contains(&format!("signed by {public}")),
        "{}",
        text(&verify.stdout)
    );
    // The key as a file, in the JSON the service publishes.
    let key_file = folder.path().join("public-key.json");
    std::fs::write(
        &key_file,
        format!(r#"{{"alg":"ed25519","key":"{public}"}}"#),
    )
    .expect("write");
    let verify = referee(&[
        "replay",
        "verify",
        arg(&replay),
        "--public-key",
        arg(&key_file),
        "--json",
    ]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    let verdict: serde_json::Value = serde_json::from_slice(&verify.stdout).expect("json");
    assert_eq!(verdict["signature"]["status"], "valid");
}

#[test]
fn a_tampered_replay_fails_the_signature_then_the_rules_at_the_exchange() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let replay = signed_replay(folder.path(), "match.json", &key);
    let tampered = folder.path().join("tampered.json");
    tamper(&replay, &tampered);

    let verify = referee(&["replay", "verify", arg(&tampered)]);
    assert_eq!(verify.status.code(), Some(1));
    let stderr = text(&verify.stderr);
    assert!(
        stderr.contains("signature check failed: the signature does not match"),
        "{stderr}"
    );

    // Even signed again (a referee that lies), the rules catch the change.
    let resign = referee(&["replay", "sign", arg(&tampered), "--signing-key", arg(&key)]);
    assert!(resign.status.success(), "{}", text(&resign.stderr));
    let verify = referee(&["replay", "verify", arg(&tampered)]);
    assert_eq!(verify.status.code(), Some(1));
    let stderr = text(&verify.stderr);
    assert!(
        stderr.contains("rules check failed at round 1, exchange 3, fighter a: hp is"),
        "{stderr}"
    );
    let verify = referee(&["replay", "verify", arg(&tampered), "--json"]);
    assert_eq!(verify.status.code(), Some(1));
    let verdict: serde_json::Value = serde_json::from_slice(&verify.stdout).expect("json");
    assert_eq!(verdict["check"], "rules");
    assert_eq!(verdict["location"], "round 1, exchange 3, fighter a");
}

/// Sets fighter a's tokens to 2^64−1 in exchange 1 and 2 in exchange 2, and its
/// recorded total to the wrapped sum, 1.
fn wrap_tokens(path: &Path, out: &Path) {
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    value["rounds"][0]["exchanges"][0]["a"]["tokens"] = u64::MAX.into();
    value["rounds"][0]["exchanges"][1]["a"]["tokens"] = 2u64.into();
    value["result"]["tokens_used"][0] = u64::MAX.wrapping_add(2).into();
    std::fs::write(out, serde_json::to_vec_pretty(&value).expect("json")).expect("write");
}

#[test]
fn token_sums_that_wrap_are_refused_naming_the_field() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let replay = signed_replay(folder.path(), "match.json", &key);
    let wrapped = folder.path().join("wrapped.json");
    wrap_tokens(&replay, &wrapped);
    // 2^64 - 1 tokens is past what a signature can bind: refused to sign,
    // to verify and to show, with the field named.
    for args in [
        vec!["replay", "sign", arg(&wrapped), "--signing-key", arg(&key)],
        vec!["replay", "verify", arg(&wrapped)],
        vec!["replay", "show", arg(&wrapped)],
    ] {
        let output = referee(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr
                .contains("rounds[0].exchanges[0].a.tokens is 18446744073709551615, over 2^53 - 1"),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
    // The honest replay shows its total plainly.
    let show = referee(&["replay", "show", arg(&replay)]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    assert!(!text(&show.stdout).contains("does not verify"));
}

#[test]
fn a_replay_signed_by_another_key_fails() {
    let folder = tempfile::tempdir().expect("temp dir");
    let ours = folder.path().join("ours.key");
    let theirs = folder.path().join("theirs.key");
    let expected = public_key_of(&ours);
    let replay = signed_replay(folder.path(), "match.json", &theirs);
    let verify = referee(&["replay", "verify", arg(&replay), "--public-key", &expected]);
    assert_eq!(verify.status.code(), Some(1));
    let stderr = text(&verify.stderr);
    assert!(
        stderr.contains("signature check failed: signed by key"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("not by the expected key {expected}")),
        "{stderr}"
    );

    let unsigned = folder.path().join("unsigned.json");
    let local = referee(&[
        "local",
        "builtin:block",
        "builtin:random",
        "--seed",
        "2",
        "--replay",
        arg(&unsigned),
    ]);
    assert!(local.status.success());
    let verify = referee(&[
        "replay",
        "verify",
        arg(&unsigned),
        "--public-key",
        &expected,
    ]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(text(&verify.stderr).contains("the replay is not signed"));
    let verify = referee(&["replay", "verify", arg(&unsigned)]);
    assert!(
        verify.status.success(),
        "an unsigned replay still verifies its rules"
    );
    assert!(text(&verify.stdout).contains("(unsigned)"));

    let bad_key = referee(&[
        "replay",
        "verify",
        arg(&unsigned),
        "--public-key",
        "nonsense",
    ]);
    assert_eq!(bad_key.status.code(), Some(2));
    assert!(
        text(&bad_key.stderr).contains("--public-key"),
        "{}",
        text(&bad_key.stderr)
    );
}

#[test]
fn fetch_downloads_verifies_and_saves_and_show_reads_urls() {
    let folder = tempfile::tempdir().expect("temp dir");
    let store = ReplayStore::open(arg(&folder.path().join("store"))).expect("open");
    let key = support::referee_key();
    let runtime = support::runtime();
    let good = support::signed(
        support::play(
            "f-1",
            "2026-04-01T00:00:00Z",
            WeightClass::Middle,
            3,
            "builtin:counter",
            "builtin:random",
        ),
        &key,
    );
    let forged = support::signed(
        support::play(
            "f-2",
            "2026-04-02T00:00:00Z",
            WeightClass::Middle,
            4,
            "builtin:counter",
            "builtin:random",
        ),
        &SigningKey::from_bytes(&[7; 32]),
    );
    runtime.block_on(store.put(&good)).expect("put");
    runtime.block_on(store.put(&forged)).expect("put");
    let server = support::Server::start(store, &key, RateConfig::default());

    let out = folder.path().join("fetched.json");
    let fetch = referee(&[
        "replay",
        "fetch",
        &server.url("/replays/f-1"),
        "--out",
        arg(&out),
    ]);
    assert!(fetch.status.success(), "{}", text(&fetch.stderr));
    assert!(
        text(&fetch.stdout).contains("saved to"),
        "{}",
        text(&fetch.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(&out).expect("saved"),
        good.to_json_pretty()
    );

    let by_id = folder.path().join("by-id.json");
    let fetch = referee(&[
        "replay",
        "fetch",
        "f-1",
        "--server",
        &server.url(""),
        "--out",
        arg(&by_id),
    ]);
    assert!(fetch.status.success(), "{}", text(&fetch.stderr));
    assert!(by_id.is_file());

    let forged_out = folder.path().join("forged.json");
    let fetch = referee(&[
        "replay",
        "fetch",
        &server.url("/replays/f-2"),
        "--out",
        arg(&forged_out),
    ]);
    assert_eq!(fetch.status.code(), Some(1));
    assert!(
        text(&fetch.stderr).contains("signature check failed: signed by key"),
        "{}",
        text(&fetch.stderr)
    );
    assert!(!forged_out.exists(), "an unverified replay is not saved");

    let missing = referee(&["replay", "fetch", &server.url("/replays/f-404")]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("404 (no replay with id f-404)"),
        "{}",
        text(&missing.stderr)
    );
    let no_server = referee(&["replay", "fetch", "f-1"]);
    assert_eq!(no_server.status.code(), Some(2));
    assert!(
        text(&no_server.stderr).contains("--server"),
        "{}",
        text(&no_server.stderr)
    );

    let show = referee(&[
        "replay",
        "show",
        &server.url("/replays/f-1"),
        "--color",
        "never",
    ]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    assert!(text(&show.stdout).contains("builtin:counter"));
    let verify = referee(&["replay", "verify", &server.url("/replays/f-1")]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));
}

#[test]
fn put_publishes_files_into_a_store() {
    let folder = tempfile::tempdir().expect("temp dir");
    let key = folder.path().join("referee.key");
    let replay = signed_replay(folder.path(), "match.json", &key);
    let store = folder.path().join("store");
    let put = referee(&["replay", "put", "--store", arg(&store), arg(&replay)]);
    assert!(put.status.success(), "{}", text(&put.stderr));
    assert!(text(&put.stdout).contains("signed"));
    let broken = folder.path().join("broken.json");
    std::fs::write(&broken, "{").expect("write");
    let put = referee(&["replay", "put", "--store", arg(&store), arg(&broken)]);
    assert_eq!(put.status.code(), Some(2));
    assert!(
        text(&put.stderr).contains("cannot publish"),
        "{}",
        text(&put.stderr)
    );
}
