#!/usr/bin/env bash
# Builds the image from the repository's Dockerfile and runs it for real:
#   1. starts Docker if it is not running (installs Debian's docker.io when
#      missing) and, when no registry can be reached, builds stand-ins for the
#      base images the Dockerfile names (`debian:bookworm-slim` from debootstrap,
#      `rust:1.95-bookworm` from it plus the host's Rust toolchain);
#   2. builds the image (`duel:latest`, a multi-stage build, BuildKit);
#   3. checks its size, its non-root user, `referee --version`, `ladder --help`;
#   4. runs `ladder serve` (SQLite in a volume) and a separate `ladder worker`
#      container, registers the example WASM bots, plays ranked matches, fetches
#      a replay over HTTP and verifies it with `referee replay fetch`;
#   5. brings deploy/compose.yaml up with host networking and a PostgreSQL image
#      built from Debian's package (deploy/compose.host-network.yaml: its
#      `ladder-host` replaces the port-publishing `ladder`), plays ranked
#      matches there between three owners' bots, checks the ledger and
#      verifies a replay from the deployed replay service.
#
#   scripts/docker-test.sh                 # everything
#   scripts/docker-test.sh --no-deploy     # steps 1-4
#   scripts/docker-test.sh --build-only    # steps 1-3
#   scripts/docker-test.sh --no-build …    # test the existing image as it is
#   scripts/docker-test.sh --apt-sources   # print the Debian mirrors read from
#       this machine's apt sources (below) and exit: nothing else is run
#   scripts/docker-test.sh --prebuilt DIR … # the image over DIR/referee and
#       DIR/ladder (built on this bookworm host) instead of compiling them in
#       the builder stage: the Dockerfile's BINARIES=prebuilt. The runtime
#       stage, user, volumes and every run below are the same; .ci/run uses it
#       with the debug binaries its tests built (stripped), since a cold
#       release build in the builder stage takes over an hour on 2 cores.
#
# Every container runs with `--network host` (bound to 127.0.0.1) or `none`:
# nothing talks to any address but loopback, except the builds, which reach
# crates.io as the host does and the Debian mirrors this machine's own apt
# sources name (/etc/apt/sources.list and sources.list.d/*.list, *.sources):
# the debootstrap stand-in is built from the mirror that serves bookworm, and
# its apt sources are the machine's bookworm, bookworm-updates and
# bookworm-security entries. No mirror is named here.
# Env: DUEL_IMAGE (default duel:latest), DUEL_APT_ETC (default /etc/apt: where
# the apt sources are read), DUEL_DOCKER_WORK (default
# /var/tmp/duel-docker: debootstrap tree, dockerd log, test files),
# DUEL_IMAGE_MAX_MB (default 250; 400 with --prebuilt), KEEP=1 keeps the test containers and volumes.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
image="${DUEL_IMAGE:-duel:latest}"
work="${DUEL_DOCKER_WORK:-/var/tmp/duel-docker}"
max_mb="${DUEL_IMAGE_MAX_MB:-}"
run_play=true
run_deploy=true
build=true
prebuilt=""
print_sources=false
usage="usage: $0 [--no-build | --prebuilt DIR] [--no-deploy | --build-only] | --apt-sources"
while (($#)); do
    case "$1" in
        --apt-sources) print_sources=true ;;
        --no-build) build=false ;;   # test the existing $image
        --prebuilt)
            [[ -n "${2:-}" ]] || { echo "$usage" >&2; exit 2; }
            prebuilt="$2"; shift ;;
        --no-deploy) run_deploy=false ;;
        --build-only) run_play=false; run_deploy=false ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
    shift
done
# A release build makes a ~200 MB image; unoptimised test binaries, even
# stripped, are about 2.5 times larger than release ones.
[[ -n "$max_mb" ]] || if [[ -n "$prebuilt" ]]; then max_mb=400; else max_mb=250; fi
if [[ -n "$prebuilt" ]]; then
    for binary in referee ladder; do
        [[ -x "$prebuilt/$binary" ]] || { echo "docker-test: no executable $prebuilt/$binary" >&2; exit 2; }
    done
fi
mkdir -p "$work"
started="$(date +%s)"

say() { echo "== docker-test [$(($(date +%s) - started)) s] $*"; }
fail() { echo "docker-test: FAIL: $*" >&2; exit 1; }

# ---- The machine's apt sources ---------------------------------------------
# Prints one line per Debian package source this machine's apt reads, as
# `URI SUITE`: one-line entries (`deb [options] URI SUITE COMPONENT…`) of
# sources.list and sources.list.d/*.list, and deb822 stanzas (Types, URIs,
# Suites, Enabled) of sources.list.d/*.sources. Source-package (deb-src)
# entries, comments and disabled stanzas are left out; so are files apt
# itself ignores (other extensions).
apt_sources() {
    local etc="${DUEL_APT_ETC:-/etc/apt}" file
    local files=()
    [[ -f "$etc/sources.list" ]] && files+=("$etc/sources.list")
    for file in "$etc"/sources.list.d/*.list; do [[ -f "$file" ]] && files+=("$file"); done
    if ((${#files[@]})); then
        sed -e 's/#.*//' "${files[@]}" | awk '
            $1 == "deb" {
                i = 2
                # [arch=amd64 signed-by=…] options, which may hold spaces.
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if (i + 1 <= NF) print $i, $(i + 1)
            }'
    fi
    for file in "$etc"/sources.list.d/*.sources; do
        [[ -f "$file" ]] || continue
        # Stanzas are separated by blank lines; a field may continue on
        # lines that start with a space (only Signed-By does in practice).
        awk '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
                    n = split(uris, u, " "); m = split(suites, s, " ")
                    for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) print u[a], s[b]
                }
                types = uris = suites = ""; enabled = "yes"
            }
            BEGIN { enabled = "yes" }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            /^[^ \t]/ {
                field = tolower($1); sub(/:$/, "", field)
                value = $0; sub(/^[^:]*:[ \t]*/, "", value); gsub(/[ \t]+/, " ", value)
                if (field == "types") types = value
                else if (field == "uris") uris = value
                else if (field == "suites") suites = value
                else if (field == "enabled") enabled = value
            }
            END { flush() }' "$file"
    done
}

# The machine's sources for Debian bookworm (`URI SUITE` lines for bookworm,
# bookworm-updates and bookworm-security), or a one-line failure.
bookworm_sources() {
    local sources
    sources="$(apt_sources | awk '$2 == "bookworm" || $2 == "bookworm-updates" || $2 == "bookworm-security"' | awk '!seen[$0]++')"
    grep -q ' bookworm$' <<<"$sources" \
        || fail "this machine's apt sources (${DUEL_APT_ETC:-/etc/apt}/sources.list, sources.list.d/) name no mirror for bookworm: add one, or make debian:bookworm-slim pullable"
    echo "$sources"
}

if $print_sources; then
    bookworm_sources
    exit 0
fi

as_root() {
    if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null \
        || { as_root apt-get update -q >/dev/null && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; }
}

# ---- 1. Docker itself -------------------------------------------------------
ensure_docker() {
    if ! command -v docker >/dev/null || [[ ! -x /usr/sbin/dockerd ]]; then
        say "installing Debian's docker.io"
        apt_install docker.io
    fi
    if docker info >/dev/null 2>&1; then
        return
    fi
    say "starting dockerd (log: $work/dockerd.log)"
    # No systemd here: run the daemon in the background; it outlives the script
    # so the layer cache and the image stay usable.
    as_root bash -c "nohup /usr/sbin/dockerd >>'$work/dockerd.log' 2>&1 </dev/null &"
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && return
        sleep 1
    done
    tail -20 "$work/dockerd.log" >&2
    fail "dockerd did not start"
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# A registry pull, given up quickly: on machines without one it fails at once
# or hangs on the connection.
try_pull() { timeout 60 docker pull -q "$1" >/dev/null 2>&1; }

# `debian:bookworm-slim`: a debootstrap minbase tree, trimmed like the official
# slim image (no docs, man pages or locales; apt keeps no lists or packages).
prepare_debian() {
    have_image debian:bookworm-slim && return
    try_pull debian:bookworm-slim && return
    local sources mirror list
    sources="$(bookworm_sources)"
    # The mirror of the machine's own apt sources that serves bookworm.
    mirror="$(awk '$2 == "bookworm" { print $1; exit }' <<<"$sources")"
    # The stand-in reads the same mirrors the machine does (main only, as the
    # official slim image).
    list="$(awk '{ print "deb " $1 " " $2 " main" }' <<<"$sources")"
    say "building the debian:bookworm-slim stand-in with debootstrap from $mirror (this machine's apt sources)"
    command -v debootstrap >/dev/null || apt_install debootstrap
    local root="$work/rootfs"
    if [[ ! -f "$root/.complete" ]]; then
        as_root rm -rf "$root"
        as_root debootstrap --variant=minbase bookworm "$root" "$mirror" \
            >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
        as_root touch "$root/.complete"
    fi
    printf '%s\n' "$list" | as_root tee "$root/etc/apt/sources.list" >/dev/null
    as_root bash -c "
        set -e
        cat >'$root/etc/dpkg/dpkg.cfg.d/docker-slim' <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
CFG
        cat >'$root/etc/apt/apt.conf.d/docker-clean' <<'CFG'
DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };
APT::Update::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };
Binary::apt::APT::Keep-Downloaded-Packages \"false\";
CFG
        echo 'Acquire::GzipIndexes \"true\";' >'$root/etc/apt/apt.conf.d/docker-gzip-indexes'
        rm -rf '$root'/var/cache/apt/archives/*.deb '$root'/var/lib/apt/lists/* '$root'/usr/share/man/* '$root'/usr/share/info/* '$root'/usr/share/locale/*
        find '$root/usr/share/doc' -mindepth 1 -not -name copyright -not -type d -delete
    "
    as_root tar -C "$root" --exclude=./.complete -c . \
        | docker import \
            --change 'CMD ["bash"]' \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'LABEL org.duel.stand-in=debootstrap' \
            - debian:bookworm-slim >/dev/null
}

# `rust:1.95-bookworm`: the Debian stand-in plus a C toolchain from Debian and
# the host's Rust 1.95 toolchain (rustup's, without its HTML docs).
prepare_rust() {
    have_image rust:1.95-bookworm && return
    try_pull rust:1.95-bookworm && return
    say "building the rust:1.95-bookworm stand-in from the host's toolchain"
    local sysroot
    sysroot="$(rustup run 1.95 rustc --print sysroot 2>/dev/null || rustc --print sysroot)"
    "$sysroot/bin/rustc" --version | grep -q '^rustc 1\.95\.' \
        || fail "the host's Rust is $("$sysroot/bin/rustc" --version), not 1.95 (rustup toolchain install 1.95)"
    local context="$work/rust-context"
    rm -rf "$context" && mkdir -p "$context/toolchain"
    cp "$repo/scripts/docker/rust-stand-in.Dockerfile" "$context/Dockerfile"
    mkdir -p "$context/ca"
    find /usr/local/share/ca-certificates -name '*.crt' -exec cp {} "$context/ca/" \; 2>/dev/null || true
    # Hard links when the toolchain is on the same file system: no 600 MB copy.
    cp -al "$sysroot/." "$context/toolchain/" 2>/dev/null || cp -a "$sysroot/." "$context/toolchain/"
    rm -rf "$context/toolchain/share/doc"
    build_image -t rust:1.95-bookworm "$context"
    rm -rf "$context"
}

# Builds with BuildKit (the Dockerfile's cache mounts need it): `docker buildx`
# when installed, else a CLI with BuildKit built in (Debian's docker.io 20.10
# CLI is /usr/bin/docker; a newer CLI without buildx only has the old builder).
build_image() {
    if docker buildx version >/dev/null 2>&1; then
        docker buildx build --load --network host --progress plain "$@"
    elif [[ -x /usr/bin/docker ]] && /usr/bin/docker version -f '{{.Client.Version}}' 2>/dev/null | grep -q '^20\.10\.'; then
        DOCKER_BUILDKIT=1 /usr/bin/docker build --network host --progress plain "$@"
    else
        DOCKER_BUILDKIT=1 docker build --network host --progress plain "$@"
    fi
}

# ---- 3. The image's shape ---------------------------------------------------
check_image() {
    local bytes mb user
    bytes="$(docker image inspect -f '{{.Size}}' "$image")"
    mb=$((bytes / 1000000))
    say "image $image: $mb MB (limit $max_mb MB)"
    ((mb <= max_mb)) || fail "the image is $mb MB, over $max_mb MB"
    user="$(docker image inspect -f '{{.Config.User}}' "$image")"
    [[ "$user" == "duel:duel" ]] || fail "the image's user is '$user', not duel:duel"
    [[ "$(docker run --rm --network none "$image" id -u)" == 10001 ]] || fail "not running as uid 10001"
    docker run --rm --network none "$image" referee --version | grep '^referee ' >/dev/null \
        || fail "referee --version"
    docker run --rm --network none "$image" ladder --help | grep 'Usage: ladder' >/dev/null \
        || fail "ladder --help"
    # The runtime has no compiler: only the binaries and the base.
    if docker run --rm --network none "$image" sh -c 'command -v cargo || command -v gcc' >/dev/null; then
        fail "the runtime image contains a compiler"
    fi
    say "user duel (uid 10001), referee --version and ladder --help work"
}

# ---- 4. A ladder in containers: serve, a separate worker, WASM bots ---------
prefix=duel-test
data_volume="$prefix-data"
replays_volume="$prefix-replays"
secrets_volume="$prefix-secrets"
containers=("$prefix-serve" "$prefix-worker")
volumes=("$data_volume" "$replays_volume" "$secrets_volume")

cleanup_play() {
    docker rm -f "${containers[@]}" >/dev/null 2>&1 || true
    docker volume rm "${volumes[@]}" >/dev/null 2>&1 || true
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

db=sqlite:///var/lib/duel/data/ladder.db
key=/var/lib/duel/secrets/signing.key
in_container() { # [docker run options…] -- command…
    local options=()
    while [[ "$1" != -- ]]; do options+=("$1"); shift; done
    shift
    docker run --rm "${options[@]}" \
        -v "$data_volume:/var/lib/duel/data" -v "$replays_volume:/var/lib/duel/replays" \
        -v "$secrets_volume:/var/lib/duel/secrets" "$image" "$@"
}
# A CLI call to the server as OWNER (root, alice, …); the WASM bots are mounted read-only.
as_owner() {
    local owner="$1"; shift
    docker run --rm --network host -v "$secrets_volume:/var/lib/duel/secrets" \
        -v "$bots:/bots:ro" "$image" \
        ladder --server "http://127.0.0.1:$api_port" \
        --token-file "/var/lib/duel/secrets/$owner.token" "$@"
}

play() {
    bots="${BOTS_OUT:-$repo/target/bots}"
    say "building the example WASM bots (scripts/build-bots --rust)"
    BOTS_OUT="$bots" "$repo/scripts/build-bots" --rust >/dev/null
    cleanup_play
    [[ "${KEEP:-}" == 1 ]] || trap cleanup_play EXIT
    for volume in "${volumes[@]}"; do docker volume create "$volume" >/dev/null; done

    local init public_key
    init="$(in_container --network none -- ladder init --db "$db" --operator root \
        --token-file /var/lib/duel/secrets/root.token --signing-key "$key")"
    public_key="$(sed -n 's/.*(public key \([^)]*\)).*/\1/p' <<<"$init")"
    [[ -n "$public_key" ]] || fail "ladder init printed no public key: $init"
    say "ladder init: $(tr '\n' ' ' <<<"$init")"

    api_port="$(free_port)"
    http_port="$(free_port)"
    # serve plays nothing itself (--workers 0): the worker container does, with
    # no network at all (it needs only the database file, the replay volume and
    # the key).
    docker run -d --name "$prefix-serve" --network host -e RUST_LOG=info \
        -v "$data_volume:/var/lib/duel/data" -v "$replays_volume:/var/lib/duel/replays" \
        -v "$secrets_volume:/var/lib/duel/secrets" "$image" \
        ladder serve --db "$db" --listen "127.0.0.1:$api_port" --http "127.0.0.1:$http_port" \
        --replays /var/lib/duel/replays --signing-key "$key" --workers 0 --wave-interval-ms 500 >/dev/null
    docker run -d --name "$prefix-worker" --network none -e RUST_LOG=info \
        -v "$data_volume:/var/lib/duel/data" -v "$replays_volume:/var/lib/duel/replays" \
        -v "$secrets_volume:/var/lib/duel/secrets:ro" "$image" \
        ladder worker --db "$db" --workers 2 --replays /var/lib/duel/replays --signing-key "$key" >/dev/null
    local ready=false
    for _ in $(seq 1 60); do
        if as_owner root account whoami >/dev/null 2>&1; then ready=true; break; fi
        sleep 0.5
    done
    $ready || { docker logs "$prefix-serve" 2>&1 | tail -20 >&2; fail "ladder serve did not answer on 127.0.0.1:$api_port"; }
    say "ladder serve on 127.0.0.1:$api_port (replays on :$http_port), worker container on --network none"

    as_owner root season start autumn >/dev/null
    for owner in alice bob carol; do
        as_owner root account create "$owner" --out "/var/lib/duel/secrets/$owner.token" >/dev/null
        as_owner root credits grant "$owner" 1000 --id "seed:$owner" >/dev/null
    done
    # owner:bot:file — four WASM bots of three owners (an owner's bots never meet).
    local entries=(alice:a-counter:counter alice:a-dice:dice bob:b-jabber:jabber carol:c-pacer:pacer)
    local entry owner bot file
    for entry in "${entries[@]}"; do
        IFS=: read -r owner bot file <<<"$entry"
        as_owner "$owner" bot register "$bot" --class light --wasm "/bots/$file.wasm" >/dev/null
    done
    say "registered ${#entries[@]} WASM bots: ${entries[*]}"
    local want=4 settled=0 round
    for round in $(seq 1 12); do
        for entry in "${entries[@]}"; do
            IFS=: read -r owner bot file <<<"$entry"
            # A bot still waiting from an earlier round is refused ("conflict") and keeps waiting.
            as_owner "$owner" enqueue "$bot" --stake 20 >/dev/null 2>&1 || true
        done
        for _ in $(seq 1 20); do
            settled="$(as_owner root matches --state settled --json | jq length)"
            ((settled >= want)) && break 2
            sleep 1
        done
    done
    ((settled >= want)) || { docker logs "$prefix-worker" 2>&1 | tail -20 >&2; fail "$settled of $want matches settled"; }
    say "$settled ranked matches settled"
    as_owner root ledger check >/dev/null || fail "ledger check"
    as_owner alice standings

    local id base="http://127.0.0.1:$http_port"
    id="$(as_owner root matches --state settled --json | jq -r '.[0].id')"
    curl -fsS "$base/replays?season=autumn" | jq -e --arg id "$id" '.replays | map(.id) | index($id) != null' >/dev/null \
        || fail "match $id is not listed under season autumn"
    curl -fsS -o /dev/null "$base/replays/$id/view" || fail "viewer page of $id"
    # The signature must be the key init created, not merely the one the server publishes.
    docker run --rm --network host "$image" \
        referee replay fetch "$base/replays/$id" --public-key "$public_key" --out /tmp/replay.json \
        || fail "referee replay fetch $base/replays/$id"
    say "replay $id fetched over HTTP; signature (init's key) and rules verified"

    docker stop -t 40 "$prefix-worker" "$prefix-serve" >/dev/null
    for container in "${containers[@]}"; do
        local code
        code="$(docker inspect -f '{{.State.ExitCode}}' "$container")"
        [[ "$code" == 0 || "$code" == 130 ]] || { docker logs "$container" 2>&1 | tail -20 >&2; fail "$container exited $code on SIGTERM"; }
    done
    in_container --network none -- ladder ledger check --db "$db" >/dev/null || fail "ledger check --db after shutdown"
    say "serve and worker stopped on SIGTERM; ledger check on the database: ok"
    if [[ "${KEEP:-}" != 1 ]]; then cleanup_play; trap - EXIT; fi
}

# ---- 5. deploy/: compose with host networking --------------------------------
# PostgreSQL: the official image when it can be pulled, else a stand-in built
# from Debian bookworm's postgresql-15 package (scripts/docker/postgres-stand-in.Dockerfile).
prepare_postgres() {
    if have_image postgres:17-bookworm || try_pull postgres:17-bookworm; then
        postgres_image=postgres:17-bookworm
        return
    fi
    postgres_image=duel-postgres:15-bookworm
    have_image "$postgres_image" && return
    say "building the PostgreSQL stand-in ($postgres_image) from Debian's package"
    build_image -t "$postgres_image" -f "$repo/scripts/docker/postgres-stand-in.Dockerfile" \
        "$repo/scripts/docker" >"$work/postgres-build.log" 2>&1 \
        || { tail -20 "$work/postgres-build.log" >&2; fail "building $postgres_image"; }
}

# Compose 2 (`docker compose`) when present, else Debian's docker-compose 1.29.
compose() {
    if docker compose version >/dev/null 2>&1; then
        docker compose "${compose_files[@]}" "$@"
    else
        docker-compose "${compose_files[@]}" "$@"
    fi
}

deploy() {
    prepare_postgres
    if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
        say "installing Debian's docker-compose"
        apt_install docker-compose
    fi
    local project=duel-deploy-test
    compose_files=(-p "$project" -f "$repo/deploy/compose.yaml" -f "$repo/deploy/compose.host-network.yaml")
    export POSTGRES_IMAGE="$postgres_image" LADDER_API_PORT LADDER_HTTP_PORT
    LADDER_API_PORT="$(free_port)"
    LADDER_HTTP_PORT="$(free_port)"
    api_port="$LADDER_API_PORT"
    compose down -v --remove-orphans >/dev/null 2>&1 || true
    [[ "${KEEP:-}" == 1 ]] || trap 'compose down -v --remove-orphans >/dev/null 2>&1 || true' EXIT
    # The image is built above; compose only runs it (no --build: Compose 1.x
    # would build without BuildKit, which the Dockerfile's cache mounts need).
    say "deploy: compose up ($postgres_image, 2 workers, host network, API 127.0.0.1:$api_port)"
    compose up -d --scale worker=2 >"$work/compose-up.log" 2>&1 \
        || { cat "$work/compose-up.log" >&2; compose logs --tail 20 >&2; fail "compose up"; }
    # The operator token, as deploy/README.md says to read it.
    local token_dir="$work/deploy-secrets"
    rm -rf "$token_dir" && mkdir -p "$token_dir"
    compose run --rm -T --no-deps --entrypoint cat init /var/lib/duel/secrets/operator.token \
        >"$token_dir/root.token" 2>/dev/null || fail "reading the operator token"
    chmod 0644 "$token_dir/root.token"   # read by uid 10001 in the client containers
    deploy_cli() {
        local owner="$1"; shift
        docker run --rm --network host -v "$token_dir:/tokens" -u "$(id -u):$(id -g)" "$image" \
            ladder --server "http://127.0.0.1:$api_port" --token-file "/tokens/$owner.token" "$@"
    }
    local ready=false
    for _ in $(seq 1 60); do
        if deploy_cli root account whoami >/dev/null 2>&1; then ready=true; break; fi
        sleep 1
    done
    $ready || { compose logs --tail 20 >&2; fail "the deployed ladder did not answer"; }
    deploy_cli root season start deploy-s1 >/dev/null
    local owner
    # Three owners: the matchmaker never pairs one owner's bots, nor two bots
    # that just met, so two bots alone would play only once.
    for owner in dora eve fay; do
        deploy_cli root account create "$owner" --out "/tokens/$owner.token" >/dev/null
        deploy_cli root credits grant "$owner" 500 --id "seed:$owner" >/dev/null
    done
    deploy_cli dora bot register d-counter --class light --builtin builtin:counter >/dev/null
    deploy_cli eve bot register e-block --class light --builtin builtin:block >/dev/null
    deploy_cli fay bot register f-random --class light --builtin builtin:random >/dev/null
    local settled=0
    for _ in $(seq 1 6); do
        # A bot still waiting from an earlier round is refused ("conflict") and keeps waiting.
        deploy_cli dora enqueue d-counter --stake 25 >/dev/null 2>&1 || true
        deploy_cli eve enqueue e-block --stake 25 >/dev/null 2>&1 || true
        deploy_cli fay enqueue f-random --stake 25 >/dev/null 2>&1 || true
        for _ in $(seq 1 15); do
            settled="$(deploy_cli dora matches --state settled --json | jq length)"
            ((settled >= 2)) && break 2
            sleep 1
        done
    done
    ((settled >= 2)) || { compose logs --tail 20 >&2; fail "$settled of 2 matches settled on the deployment"; }
    deploy_cli root ledger check >/dev/null || fail "ledger check on the deployment"
    local id
    id="$(deploy_cli dora matches --state settled --json | jq -r '.[0].id')"
    docker run --rm --network host "$image" \
        referee replay fetch "http://127.0.0.1:$LADDER_HTTP_PORT/replays/$id" --out /tmp/replay.json >/dev/null \
        || fail "referee replay fetch from the deployment"
    local running
    running="$(compose ps -q worker | wc -l)"
    say "deploy: $settled matches settled on PostgreSQL, $running worker containers, ledger clean, replay $id verified"
    compose down -v --remove-orphans >/dev/null 2>&1
    trap - EXIT
}

# The build context for BINARIES=prebuilt: only the two binaries, stripped
# (the runtime stage copies nothing else from a context).
prebuilt_context() {
    local context="$work/prebuilt-context"
    rm -rf "$context" && mkdir -p "$context/prebuilt"
    local binary
    for binary in referee ladder; do
        objcopy --strip-all "$prebuilt/$binary" "$context/prebuilt/$binary" \
            || cp "$prebuilt/$binary" "$context/prebuilt/$binary"
    done
    echo "$context"
}

ensure_docker
prepare_debian
if $build; then
    build_start="$(date +%s)"
    if [[ -n "$prebuilt" ]]; then
        say "building $image from $repo/Dockerfile over the binaries in $prebuilt"
        build_image -t "$image" --build-arg BINARIES=prebuilt -f "$repo/Dockerfile" \
            "$(prebuilt_context)" >"$work/build.log" 2>&1 \
            || { grep -v '^#[0-9]* sha256:' "$work/build.log" | tail -40 >&2; fail "docker build"; }
    else
        prepare_rust
        say "building $image from $repo/Dockerfile"
        build_image -t "$image" "$repo" >"$work/build.log" 2>&1 \
            || { grep -v '^#[0-9]* sha256:' "$work/build.log" | tail -40 >&2; fail "docker build"; }
    fi
    say "built in $(($(date +%s) - build_start)) s (log: $work/build.log)"
fi
check_image
if $run_play; then play; fi
if $run_deploy; then deploy; fi
say "all checks passed"
