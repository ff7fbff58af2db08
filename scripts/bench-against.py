#!/usr/bin/env python3
"""The benchmarks that guard the referee's and the ladder's speed, run side by
side against a named earlier commit, alternated run by run, with medians and
ratios (this tree / the earlier commit).

    scripts/bench-against.py REV [--runs 5] [--only NAME ...]

REV's `referee` and `ladder` are built once (its release profile) in a
worktree under /var/tmp/duel-bench-<rev>/ with its own target directory;
this tree's are built with `--profile dist` (what the Docker image ships:
release with thin LTO, as every release profile was before the bot author's
build dropped LTO), or `--profile release` to time the author's build. What is measured, each as a
whole process (user + system CPU and wall time from the kernel's own
accounting, `os.wait4`):

  wasm-tournament     `referee tournament` of three example WASM bots
                      (target/bots, scripts/build-bots), 600 matches, one job:
                      wall and CPU per match
  builtin-tournament  the same with three built-in bots, 1,800 matches
  endpoint-exchange   `referee tournament` of this tree's example endpoint bot
                      against builtin:counter, 200 matches: CPU per match
                      (the same matches on both sides: its ratio is the ratio
                      per exchange)
  local-start         `referee local builtin:counter builtin:random`: wall
  ladder-bench        `ladder bench --matches 2000 --workers 8` on SQLite:
                      settled per second (higher is better)

Loopback only; nothing is written outside /var/tmp and temporary folders.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the Docker image builds (scripts/test.sh's SHIPPED): earlier commits
# had jemalloc and S3 stores unconditionally.
SHIPPED_FEATURES = "duel-referee/jemalloc,duel-referee/s3"


def run(command, **kwargs):
    print("$", " ".join(command), file=sys.stderr)
    subprocess.run(command, check=True, **kwargs)


def build_this_tree(profile):
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    run(
        [
            "cargo", "build", "--profile", profile, "--features", SHIPPED_FEATURES,
            "--bin", "referee", "--bin", "ladder", "--bin", "endpoint-bot",
        ],
        cwd=ROOT,
    )
    return os.path.join(target, profile)


def build_revision(rev):
    short = subprocess.run(
        ["git", "rev-parse", "--short=7", rev], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    base = f"/var/tmp/duel-bench-{short}"
    tree, target = os.path.join(base, "tree"), os.path.join(base, "target")
    if not os.path.isdir(tree):
        os.makedirs(base, exist_ok=True)
        run(["git", "worktree", "add", "--detach", tree, short], cwd=ROOT)
    run(
        ["cargo", "build", "--release", "--bin", "referee", "--bin", "ladder"],
        cwd=tree,
        env={**os.environ, "CARGO_TARGET_DIR": target},
    )
    return short, os.path.join(target, "release")


def timed(command, cwd=None):
    """Runs `command`; its wall seconds, CPU seconds and standard output."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(command)}")
    return wall, usage.ru_utime + usage.ru_stime, text


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def benchmarks(bots, endpoint_url):
    wasm = [os.path.join(bots, f"{name}.wasm") for name in ("counter", "jabber", "dice")]
    tournament = ["tournament", "--jobs", "1", "--seed", "1"]

    def per(count, what):
        return lambda wall, cpu, _: {f"wall ms/{what}": 1e3 * wall / count, f"CPU ms/{what}": 1e3 * cpu / count}

    return {
        "wasm-tournament": (lambda binaries: [binaries["referee"], *tournament, "--rounds", "100", *wasm], per(600, "match")),
        "builtin-tournament": (
            lambda binaries: [
                binaries["referee"], *tournament, "--rounds", "300",
                "builtin:counter", "builtin:random", "builtin:block",
            ],
            per(1800, "match"),
        ),
        "endpoint-exchange": (
            lambda binaries: [binaries["referee"], *tournament, "--rounds", "100", endpoint_url, "builtin:counter"],
            # Both sides play the same 200 matches (same seed, same bots), so
            # the ratio per match is the ratio per exchange.
            lambda wall, cpu, _: {"CPU µs/match": 1e6 * cpu / 200},
        ),
        "local-start": (
            lambda binaries: [binaries["referee"], "local", "builtin:counter", "builtin:random", "--seed", "1"],
            lambda wall, cpu, _: {"wall ms": 1e3 * wall},
        ),
        "ladder-bench": (None, None),
    }


def ladder_bench(binaries):
    folder = tempfile.mkdtemp(prefix="duel-bench-ladder-")
    try:
        _, _, text = timed(
            [
                binaries["ladder"], "bench", "--db", f"sqlite://{folder}/bench.db", "--matches", "2000",
                "--workers", "8", "--replays-dir", f"{folder}/replays", "--json",
            ],
            cwd=folder,
        )
        return {"settled/s": json.loads(text)["settled_per_s"]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the earlier commit to compare with")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="these benchmarks only")
    parser.add_argument("--profile", default="dist", help="this tree's build profile (default: dist)")
    parser.add_argument(
        "--bots",
        default=os.path.join(ROOT, "target", "bots"),
        help="the folder of counter.wasm, jabber.wasm and dice.wasm, in a world both sides load "
        "(a commit before duel:bot@1.1.0 needs its own: its scripts/build-bots with BOTS_OUT)",
    )
    args = parser.parse_args()

    short, old = build_revision(args.rev)
    new = build_this_tree(args.profile)
    binaries = {
        short: {"referee": os.path.join(old, "referee"), "ladder": os.path.join(old, "ladder")},
        "this tree": {"referee": os.path.join(new, "referee"), "ladder": os.path.join(new, "ladder")},
    }
    port = free_port()
    endpoint = subprocess.Popen(
        [os.path.join(new, "endpoint-bot"), "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(1)
        table = benchmarks(args.bots, f"grpc://127.0.0.1:{port}")
        names = [name for name in table if not args.only or name in args.only]
        figures = {name: {side: {} for side in binaries} for name in names}
        for round_ in range(args.runs):
            for name in names:
                sides = list(binaries) if round_ % 2 == 0 else list(binaries)[::-1]
                for side in sides:
                    command, reading = table[name]
                    if name == "ladder-bench":
                        measured = ladder_bench(binaries[side])
                    else:
                        measured = reading(*timed(command(binaries[side])))
                    for figure, value in measured.items():
                        figures[name][side].setdefault(figure, []).append(value)
        print(f"\n| benchmark | figure | {short} (median of {args.runs}) | this tree | this tree / {short} |")
        print("|---|---|---:|---:|---:|")
        for name in names:
            for figure, values in figures[name][short].items():
                before = statistics.median(values)
                after = statistics.median(figures[name]["this tree"][figure])
                print(f"| {name} | {figure} | {before:,.2f} | {after:,.2f} | {after / before:.2f}× |")
    finally:
        endpoint.terminate()
        endpoint.wait()


if __name__ == "__main__":
    main()
