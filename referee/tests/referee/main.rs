//! The referee's integration tests, one binary (one link of wasmtime, tonic
//! and axum instead of one per file): each module is one product face,
//! through the real `referee` binary, real servers on loopback, real WASM
//! components and headless Chromium.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

mod grpc_support;
#[path = "../../../sandbox/tests/common/handmade.rs"]
mod handmade;
#[path = "support/python_llm.rs"]
// The ladder's tests use its policy bot, not this crate's.
#[allow(dead_code)]
mod python_llm;
mod support;
use support::services;
mod watch_support;

mod author_loop;
mod bot_logs;
mod cli;
mod clock_fairness;
mod endpoint_bots;
mod entry_points;
mod fork;
mod gateway_hardening;
mod golden;
mod hardening_files;
mod llama_upstream;
mod llm_bots;
mod metering;
mod openai_face;
mod openai_property;
mod openai_python;
mod publish_http;
mod replay_bounds;
mod replay_cli;
mod replay_properties;
mod serve;
mod stores;
mod tls;
mod tokens;
mod viewer;
mod wasm_hostile;
mod wasm_match;
mod wasm_memory;
mod workbench;
