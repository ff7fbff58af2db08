# The duel platform's binaries, `referee` and `ladder`, in a small runtime image.
#   DOCKER_BUILDKIT=1 docker build -t duel .     # BuildKit: the default since Docker 23
#   docker run --rm duel ladder --help
# deploy/ runs it with PostgreSQL and several workers (see deploy/README.md);
# scripts/docker-test.sh builds and runs it, also without an image registry.
#
# No `# syntax=` line on purpose: BuildKit's built-in frontend (Docker >= 20.10)
# knows `RUN --mount`, and a syntax line would pull a frontend image from a
# registry, which offline builders cannot reach.

# Where the binaries come from: `builder` (below, the default) compiles them;
# `prebuilt` takes them from the build context's prebuilt/ folder, for a quick
# check of the runtime image over binaries built on a bookworm host
# (scripts/docker-test.sh --prebuilt DIR, which .ci/run uses).
ARG BINARIES=builder

# ---- builder: the workspace's toolchain (rust-version in Cargo.toml) ----
FROM rust:1.95-bookworm AS builder
WORKDIR /src
COPY . .
# --locked: the image builds exactly what Cargo.lock pins. The cache mounts keep
# downloaded crates and compiled dependencies between builds (they are not part
# of any image): a source change recompiles the workspace's crates, not all 500.
RUN --mount=type=cache,id=duel-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=duel-cargo-git,target=/usr/local/cargo/git \
    --mount=type=cache,id=duel-target,target=/src/target \
    cargo build --profile dist --locked --features duel-referee/jemalloc,duel-referee/s3 --bin referee --bin ladder \
 && mkdir -p /out \
 && cp target/dist/referee target/dist/ladder /out/

# ---- prebuilt: binaries from the context (BINARIES=prebuilt) ----
FROM scratch AS prebuilt
COPY prebuilt/referee prebuilt/ladder /out/

FROM ${BINARIES} AS binaries

# ---- runtime: Debian slim, no compiler, no shell tools beyond the base ----
FROM debian:bookworm-slim
# The volume mount points exist, owned by `duel`, so that a fresh named volume
# mounted there (deploy/compose.yaml: replays, secrets; SQLite's data) starts out
# writable by the non-root user instead of root-owned.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 duel \
 && useradd --system --uid 10001 --gid duel --home-dir /var/lib/duel --create-home duel \
 && install -d -o duel -g duel -m 0750 /var/lib/duel/replays /var/lib/duel/secrets /var/lib/duel/data
COPY --from=binaries /out/referee /out/ladder /usr/local/bin/
USER duel:duel
WORKDIR /var/lib/duel
# The ladder's gRPC API (`ladder serve --listen 0.0.0.0:50061`) and the public
# replay service (`--http 0.0.0.0:8080`).
EXPOSE 50061 8080
CMD ["ladder", "--help"]
