# The duel platform's binaries, `referee` and `ladder`, in a small runtime image.
#   docker build -t duel .
#   docker run --rm duel ladder --help
# deploy/ runs it with PostgreSQL and several workers (see deploy/README.md).

# ---- builder: the workspace's toolchain (rust-version in Cargo.toml) ----
FROM rust:1.95-bookworm AS builder
WORKDIR /src
COPY . .
# --locked: the image builds exactly what Cargo.lock pins.
RUN cargo build --release --locked --bin referee --bin ladder \
 && mkdir -p /out \
 && cp target/release/referee target/release/ladder /out/

# ---- runtime: Debian slim, no compiler, no shell tools beyond the base ----
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 duel \
 && useradd --system --uid 10001 --gid duel --home-dir /var/lib/duel --create-home duel
COPY --from=builder /out/referee /out/ladder /usr/local/bin/
USER duel:duel
WORKDIR /var/lib/duel
# The ladder's gRPC API (`ladder serve --listen 0.0.0.0:50061`).
EXPOSE 50061
CMD ["ladder", "--help"]
