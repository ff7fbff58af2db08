//! The `duel.v1` protocol: generated messages, clients and servers, and the
//! encoded file descriptor set (for gRPC server reflection).
//!
//! Architecture invariant: only generated code, the codec it uses and the
//! descriptor live here; the conversions to and from domain types belong to the
//! crates that own those types.

#![allow(missing_debug_implementations, clippy::all)]

pub mod codec;

pub mod v1 {
    tonic::include_proto!("duel.v1");
}

/// The encoded `FileDescriptorSet` of every `duel.v1` proto.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("duel_v1_descriptor");

/// The `duel.v1` proto sources, as `(path under the include root, text)`:
/// what a bot written in another language generates its stubs from when it
/// is not in a checkout of this project (`referee local` does this for a
/// Python endpoint bot's folder).
pub const PROTO_SOURCES: &[(&str, &str)] = &[
    ("duel/v1/bot.proto", include_str!("../duel/v1/bot.proto")),
    (
        "duel/v1/inference.proto",
        include_str!("../duel/v1/inference.proto"),
    ),
    (
        "duel/v1/referee.proto",
        include_str!("../duel/v1/referee.proto"),
    ),
    (
        "duel/v1/ladder.proto",
        include_str!("../duel/v1/ladder.proto"),
    ),
];
