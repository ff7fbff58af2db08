//! Bots made by hand for the tests: a core module written in WAT, turned into a
//! real `duel:bot@1.0.0` component by wit-component against `sandbox/wit/v1.0.0`. No SDK
//! lets a bot answer an action value outside the enum; this does. Shared by the
//! sandbox and referee tests (the referee includes this file by path).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// A component whose `decide` returns `discriminant` as the action, whatever it
/// is shown. 0..=5 are JAB..RECOVER (the WIT enum's order); anything else is out
/// of range.
///
/// The canonical ABI of `decide(observation) -> action`: the observation
/// flattens to more than 16 values, so the host stores it in guest memory (got
/// from `cabi_realloc`) and passes one pointer; the enum comes back as one i32.
pub fn component_answering(discriminant: u32) -> Vec<u8> {
    let wat = format!(
        r#"(module
  (memory (export "memory") 1)
  ;; A bump allocator for the host's copy of the observation (well under a
  ;; page), rewound at every decision: nothing is read back from it.
  (global $next (mut i32) (i32.const 1024))
  (func (export "cabi_realloc")
        (param $old i32) (param $old_size i32) (param $align i32) (param $size i32)
        (result i32)
    (local $at i32)
    (local.set $at
      (i32.and
        (i32.add (global.get $next) (i32.sub (local.get $align) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get $align))))
    (global.set $next (i32.add (local.get $at) (local.get $size)))
    (local.get $at))
  (func (export "decide") (param $observation i32) (result i32)
    (global.set $next (i32.const 1024))
    (i32.const {discriminant})))"#
    );
    let mut module = wat::parse_str(&wat).expect("the WAT parses");
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sandbox/wit/v1.0.0");
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir(&wit).expect("the duel:bot WIT parses");
    let world = resolve
        .select_world(&[package], Some("bot"))
        .expect("the bot world");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )
    .expect("metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the module fits the world")
        .validate(true)
        .encode()
        .expect("the component encodes")
}
