# Stand-in for the official `rust:1.95-bookworm` image, for machines that cannot
# reach an image registry (scripts/docker-test.sh builds it only then). Debian
# bookworm (the debootstrapped `debian:bookworm-slim` stand-in), the C toolchain
# the official image's buildpack-deps base brings and our crates' build scripts
# use (gcc for SQLite, aws-lc, zstd), and the host's Rust toolchain copied into
# `toolchain/` of the build context. The host's own extra CA certificates
# (`ca/`, from /usr/local/share/ca-certificates: e.g. a proxy's that the host
# trusts) are trusted too, so cargo reaches crates.io exactly as the host does.
FROM debian:bookworm-slim
COPY ca/ /usr/local/share/ca-certificates/
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates curl git gcc g++ libc6-dev make pkg-config \
 && rm -rf /var/lib/apt/lists/* \
 && update-ca-certificates
# The official image's layout and variables; cargo's home holds the registry.
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY toolchain /usr/local/rust
RUN mkdir -p "$CARGO_HOME/bin" && rustc --version && cargo --version
LABEL org.duel.stand-in="rust toolchain copied from the host"
