//! Compiles every `.proto` under `duel/v1/` with protox (pure Rust, so no system
//! `protoc` is needed) and generates tonic clients and servers.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let folder = PathBuf::from("duel/v1");
    println!("cargo:rerun-if-changed={}", folder.display());
    let mut protos: Vec<PathBuf> = std::fs::read_dir(&folder)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
        .collect();
    protos.sort();
    for proto in &protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }
    let descriptors = protox::compile(&protos, ["."])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptor_path = out_dir.join("duel_v1_descriptor.bin");
    std::fs::write(
        &descriptor_path,
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure()
        .file_descriptor_set_path(&descriptor_path)
        .skip_protoc_run()
        // INVALID_ARGUMENT, not INTERNAL, for a message that does not decode.
        .codec_path("crate::codec::DuelCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
