//! Uploads are validated before anything runs, compiled once per digest, and the
//! disk cache of precompiled artifacts is used by the next sandbox.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use duel_rules::{Action, Side};
use duel_sandbox::{CompileOrigin, SandboxConfig, SandboxError, WorldVersion};

fn load_error(bytes: &[u8]) -> SandboxError {
    let sandbox = sandbox(SandboxConfig::default());
    sandbox.load(bytes).expect_err("must be rejected")
}

#[test]
fn bytes_that_are_not_wasm_are_rejected() {
    let err = load_error(b"#!/bin/sh\necho hello\n");
    assert!(matches!(err, SandboxError::NotAComponent(_)), "{err}");
    assert!(err.to_string().contains("not WebAssembly"), "{err}");
    let err = load_error(b"");
    assert!(matches!(err, SandboxError::NotAComponent(_)), "{err}");
}

#[test]
fn a_core_module_is_rejected_with_a_hint() {
    let module =
        wat::parse_str("(module (func (export \"decide\") (result i32) i32.const 0))").unwrap();
    let err = load_error(&module);
    assert!(matches!(err, SandboxError::NotAComponent(_)), "{err}");
    assert!(err.to_string().contains("core wasm module"), "{err}");
    assert!(err.to_string().contains("wasm32-wasip2"), "{err}");
}

#[test]
fn a_component_without_decide_is_the_wrong_world() {
    let err = load_error(&wat::parse_str("(component)").unwrap());
    assert!(matches!(err, SandboxError::WrongWorld(_)), "{err}");
    assert!(err.to_string().contains("decide"), "{err}");
}

#[test]
fn a_component_of_another_duel_bot_version_is_rejected() {
    let component =
        wat::parse_str(r#"(component (import "duel:bot/log@9.0.0" (instance)))"#).unwrap();
    let err = load_error(&component);
    assert!(matches!(err, SandboxError::WrongWorld(_)), "{err}");
    assert!(err.to_string().contains("duel:bot@9.0.0"), "{err}");
}

#[test]
fn a_component_needing_unknown_imports_is_rejected() {
    let component = wat::parse_str(
        r#"(component (import "acme:net/http@1.0.0" (instance (export "get" (func (param "url" string))))))"#,
    )
    .unwrap();
    let err = load_error(&component);
    assert!(matches!(err, SandboxError::WrongWorld(_)), "{err}");
    assert!(err.to_string().contains("acme:net/http"), "{err}");
}

#[test]
fn corrupt_component_bytes_are_rejected() {
    let mut bytes = bot_bytes("jabber");
    bytes.truncate(bytes.len() / 2);
    let err = load_error(&bytes);
    assert!(matches!(err, SandboxError::InvalidComponent(_)), "{err}");
}

#[test]
fn uploads_over_the_cap_are_rejected_before_parsing() {
    let sandbox = sandbox(SandboxConfig {
        upload_bytes_max: 1000,
        ..SandboxConfig::default()
    });
    let err = sandbox.load(&bot_bytes("jabber")).unwrap_err();
    assert!(
        matches!(err, SandboxError::TooLarge { cap: 1000, .. }),
        "{err}"
    );
}

#[test]
fn a_real_bot_is_accepted_as_duel_bot_1_1_0() {
    let sandbox = sandbox(SandboxConfig::default());
    let bot = load(&sandbox, "jabber");
    assert_eq!(bot.world(), WorldVersion::V1_1_0);
    assert_eq!(bot.digest().len(), "sha256:".len() + 64);
    // The same bytes again come from memory.
    let again = load(&sandbox, "jabber");
    assert_eq!(again.origin(), CompileOrigin::MemoryCache);
    assert_eq!(again.digest(), bot.digest());
}

#[tokio::test]
async fn the_disk_cache_is_hit_by_the_next_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let config = SandboxConfig {
        disk_cache_dir: Some(dir.path().to_path_buf()),
        ..SandboxConfig::default()
    };
    let first = sandbox(config.clone());
    let bot = load(&first, "counter");
    assert_eq!(bot.origin(), CompileOrigin::Compiled);
    assert_eq!(first.stats().compiled, 1);
    let artifacts: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(artifacts.len(), 1, "one artifact written");

    let second = sandbox(config.clone());
    let cached = load(&second, "counter");
    assert_eq!(cached.origin(), CompileOrigin::DiskCache);
    assert_eq!(second.stats().disk_hits, 1);
    assert_eq!(second.stats().compiled, 0);
    let mut running = instance(&cached, "m", 1, Side::A);
    let bout = Bout::new("m");
    assert_eq!(
        running.decide(&bout.observation(Side::A)).await.map(|_| ()),
        Ok(())
    );
    drop(running);

    // A damaged artifact is dropped and the bot compiled again. (Replaced by a
    // rename, never rewritten in place: artifacts are mapped into memory, and
    // truncating a mapped file under a running sandbox is a SIGBUS.)
    drop((bot, cached, first, second));
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, b"garbage").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
    let third = sandbox(config);
    assert_eq!(load(&third, "counter").origin(), CompileOrigin::Compiled);
}

#[tokio::test]
async fn a_sandbox_with_the_pooling_allocator_runs_bots() {
    let sandbox = sandbox(SandboxConfig {
        allocation: duel_sandbox::Allocation::Pooling { instances: 8 },
        ..SandboxConfig::default()
    });
    let jabber = load(&sandbox, "jabber");
    for seed in 0..20 {
        let mut bot = instance(&jabber, "m", seed, Side::A);
        let bout = Bout::new("m");
        assert_eq!(
            bot.decide(&bout.observation(Side::A)).await,
            Ok(Action::Jab)
        );
    }
}

#[tokio::test]
async fn a_full_pool_never_runs_dry_instances_beyond_it_are_made_on_demand() {
    let sandbox = sandbox(SandboxConfig {
        allocation: duel_sandbox::Allocation::Pooling { instances: 2 },
        ..SandboxConfig::default()
    });
    let jabber = load(&sandbox, "jabber");
    let counter = load(&sandbox, "counter");
    let bout = Bout::new("m");
    // Five live instances at once, two bots: two fill the pool, three overflow.
    let mut live = Vec::new();
    for seed in 0..5 {
        let bot = if seed % 2 == 0 { &jabber } else { &counter };
        let mut instance = instance(bot, "m", seed, Side::A);
        let action = instance.decide(&bout.observation(Side::A)).await;
        assert!(action.is_ok(), "instance {seed}: {action:?}");
        assert_eq!(instance.stats().instantiations, 1);
        live.push(instance);
    }
    let stats = sandbox.stats();
    assert_eq!(
        (stats.pool_instantiations, stats.on_demand_instantiations),
        (2, 3)
    );
    // Overflowed instances keep deciding on their live instance, like pooled ones.
    for instance in &mut live {
        let action = instance.decide(&bout.observation(Side::A)).await;
        assert!(action.is_ok(), "{action:?}");
        assert_eq!(instance.stats().instantiations, 1);
    }
    // Slots freed go back to the pool.
    drop(live);
    let mut again = instance(&jabber, "m", 9, Side::A);
    assert_eq!(
        again.decide(&bout.observation(Side::A)).await,
        Ok(Action::Jab)
    );
    assert_eq!(sandbox.stats().pool_instantiations, 3);
    assert_eq!(sandbox.stats().on_demand_instantiations, 3);
}

#[tokio::test]
async fn without_a_pool_every_instance_is_made_on_demand() {
    let sandbox = sandbox(SandboxConfig::default());
    let jabber = load(&sandbox, "jabber");
    let bout = Bout::new("m");
    for seed in 0..3 {
        let mut bot = instance(&jabber, "m", seed, Side::A);
        assert_eq!(
            bot.decide(&bout.observation(Side::A)).await,
            Ok(Action::Jab)
        );
    }
    let stats = sandbox.stats();
    assert_eq!(
        (stats.pool_instantiations, stats.on_demand_instantiations),
        (0, 3)
    );
}
