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
