#!/usr/bin/env python3
"""Does the ladder rank bots as a round robin does? (docs/perf/ladder.md)

Plays a ranked season through the real binaries on SQLite (`ladder init`,
`ladder serve`, the CLI), with every example bot from three owners, until
--matches matches have settled; then a full `referee tournament` round robin of
the same bots; and compares:

- Kendall's tau-b between the standings order (rating - 2*RD) and the round
  robin's scores, with bots whose scores differ by --tie or less counted as tied
  (goal: >= 0.8);
- the most matches any one pair played, against the mean over the pairs that
  may meet (different owners; goal: at most 3x);
- how many settled matches were repeats (not rated).

    scripts/ladder-vs-round-robin.py [--matches 300] [--rounds 40] [--bin DIR] [--bots DIR] [--json]

Binaries come from --bin (default: $CARGO_TARGET_DIR/debug, else target/debug);
bots from --bots (default: target/bots, built by scripts/build-bots). Everything
listens on 127.0.0.1 and writes into a temporary folder (--keep DIR keeps it).
"""

import argparse
import itertools
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWNERS = ["alice", "bob", "carol"]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def kendall_tau_b(xs, ys, tie):
    """tau-b of two scorings of the same items; |y_i - y_j| <= tie is a tie in y."""
    concordant = discordant = tied_x = tied_y = pairs = 0
    for i, j in itertools.combinations(range(len(xs)), 2):
        pairs += 1
        dx = (xs[i] > xs[j]) - (xs[i] < xs[j])
        dy = 0 if abs(ys[i] - ys[j]) <= tie else (ys[i] > ys[j]) - (ys[i] < ys[j])
        if dx == 0:
            tied_x += 1
        if dy == 0:
            tied_y += 1
        if dx * dy > 0:
            concordant += 1
        elif dx * dy < 0:
            discordant += 1
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (concordant - discordant) / denominator if denominator else 0.0


class Ladder:
    def __init__(self, binary, server, folder):
        self.binary, self.server, self.folder = binary, server, folder

    def run(self, token, *args):
        command = [self.binary, "--server", self.server,
                   "--token-file", os.path.join(self.folder, f"{token}.token"), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            sys.exit(f"ladder-vs-round-robin: {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def json(self, token, *args):
        return json.loads(self.run(token, *args, "--json"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=300,
                        help="settled matches to play before comparing (default 300)")
    parser.add_argument("--bin", help="folder of the ladder and referee binaries")
    parser.add_argument("--bots", default=os.path.join(REPO, "target", "bots"),
                        help="folder of the example bots' .wasm files")
    parser.add_argument("--class", dest="weight_class", default="middle",
                        choices=["light", "middle", "heavy"])
    parser.add_argument("--workers", type=int, default=2)
    # Two rounds left the random bots' pairs to a few seeds: the round robin's
    # own order of counter and pacer flipped with the order of the bots on its
    # command line (docs/perf/ladder.md). At 40 its scores move by less than
    # the tie.
    parser.add_argument("--rounds", type=int, default=40,
                        help="round-robin rounds (each pairing from both sides per round; default 40, ~1.5 min)")
    # Ranked matches open with two forced exchanges drawn from their seeds
    # (duel_ladder_core::limits::RANKED_OPENING_EXCHANGES, docs/RULES.md): the
    # round robin plays the same game, its openings drawn the same way.
    parser.add_argument("--openings", type=int, default=2,
                        help="forced opening exchanges of every ranked match (`ladder serve "
                             "--ranked-openings`) and round-robin game (default 2, the ladder's; "
                             "0 for none)")
    parser.add_argument("--tie", type=float, default=0.02,
                        help="round-robin scores this close count as tied (default 0.02)")
    parser.add_argument("--timeout-s", type=int, default=3600,
                        help="give up on the season after this long")
    parser.add_argument("--keep", help="keep the ladder's folder here")
    parser.add_argument("--reference",
                        help="compare with this saved `referee tournament --json` of the same bots "
                             "instead of playing the round robin again")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    bin_dir = args.bin or os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "debug")
    ladder_bin, referee_bin = (os.path.join(bin_dir, name) for name in ("ladder", "referee"))
    for binary in (ladder_bin, referee_bin):
        if not os.access(binary, os.X_OK):
            sys.exit(f"ladder-vs-round-robin: no {binary}; build it or pass --bin DIR")
    bots = sorted(name[:-5] for name in os.listdir(args.bots) if name.endswith(".wasm"))
    if len(bots) < 4:
        sys.exit(f"ladder-vs-round-robin: {len(bots)} bots in {args.bots}; run scripts/build-bots")
    owner_of = {bot: OWNERS[index % len(OWNERS)] for index, bot in enumerate(bots)}

    folder = args.keep or tempfile.mkdtemp(prefix="ladder-vs-rr-")
    os.makedirs(folder, exist_ok=True)
    models = os.path.join(folder, "models.toml")
    with open(models, "w") as out:
        out.write('[[model]]\nname = "house"\nurl = "builtin:house"\ndefault = true\n')
    db = f"sqlite://{os.path.join(folder, 'ladder.db')}"
    key = os.path.join(folder, "signing.key")
    subprocess.run([ladder_bin, "init", "--db", db, "--operator", "root",
                    "--token-file", os.path.join(folder, "root.token"),
                    "--signing-key", key], check=True, capture_output=True)
    port = free_port()
    log = open(os.path.join(folder, "serve.log"), "w")
    serve = subprocess.Popen(
        [ladder_bin, "serve", "--db", db, "--listen", f"127.0.0.1:{port}",
         "--replays", os.path.join(folder, "replays"), "--signing-key", key,
         "--workers", str(args.workers), "--wave-interval-ms", "100", "--models", models,
         "--ranked-openings", str(args.openings)],
        stdout=log, stderr=log)
    started = time.monotonic()
    try:
        ladder = Ladder(ladder_bin, f"http://127.0.0.1:{port}", folder)
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        ladder.run("root", "season", "start", "compare")
        for owner in OWNERS:
            ladder.run("root", "account", "create", owner,
                       "--out", os.path.join(folder, f"{owner}.token"))
            ladder.run("root", "credits", "grant", owner, "1000000")
        for bot in bots:
            ladder.run(owner_of[bot], "bot", "register", bot, "--class", args.weight_class,
                       "--wasm", os.path.join(args.bots, f"{bot}.wasm"))
            ladder.run(owner_of[bot], "bot", "activate", bot, "--stake", "1")
        settled = 0
        while settled < args.matches:
            if time.monotonic() - started > args.timeout_s:
                sys.exit(f"ladder-vs-round-robin: {settled} settled after {args.timeout_s} s")
            if serve.poll() is not None:
                sys.exit(f"ladder-vs-round-robin: ladder serve exited; see {folder}/serve.log")
            time.sleep(2)
            status = ladder.json("root", "status")
            settled = sum(row["matches"]["settled"] for row in status["classes"]
                          if row["class"] == args.weight_class)
            print(f"\r{settled}/{args.matches} matches settled", end="", file=sys.stderr)
        print(file=sys.stderr)
        season_s = time.monotonic() - started
        ladder.run("root", "season", "end")
        standings = ladder.json("root", "standings", "--season", "compare",
                                "--class", args.weight_class)["standings"]
        matches = ladder.json("root", "matches", "--state", "settled")
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        log.close()

    started = time.monotonic()
    if args.reference:
        try:
            with open(args.reference) as saved:
                reference = json.load(saved)
        except (OSError, ValueError) as error:
            sys.exit(f"ladder-vs-round-robin: --reference {args.reference}: {error}")
    else:
        tournament = subprocess.run(
            [referee_bin, "tournament", *(os.path.join(args.bots, f"{bot}.wasm") for bot in bots),
             "--class", args.weight_class, "--rounds", str(args.rounds), "--jobs", "2",
             "--models", models, "--json",
             *(["--openings", str(args.openings)] if args.openings else [])],
            capture_output=True, text=True)
        if tournament.returncode != 0:
            sys.exit(f"ladder-vs-round-robin: referee tournament: {tournament.stderr.strip()}")
        reference = json.loads(tournament.stdout)
    round_robin_s = time.monotonic() - started
    try:
        scores = {row["bot"]: row["score"] for row in reference["standings"]["bots"]}
    except (KeyError, TypeError) as error:
        sys.exit(f"ladder-vs-round-robin: not a tournament's standings: {error}")

    conservative = {row["bot"]: row["conservative"] for row in standings}
    rating_of = {row["bot"]: row.get("rating") for row in standings}
    deviation = {row["bot"]: row.get("deviation") for row in standings}
    provisional = sorted(row["bot"] for row in standings if row.get("provisional"))
    missing = [bot for bot in bots if bot not in conservative or bot not in scores]
    if missing:
        sys.exit(f"ladder-vs-round-robin: not in both tables: {missing}")
    tau = kendall_tau_b([conservative[bot] for bot in bots], [scores[bot] for bot in bots],
                        args.tie)
    per_pair = {}
    repeats = unrated = 0
    for game in matches:
        pair = tuple(sorted((game["a"]["bot"], game["b"]["bot"])))
        per_pair[pair] = per_pair.get(pair, 0) + 1
        unrated += game.get("not_rated") is not None
        repeats += game.get("not_rated") == "repeat"
    may_meet = [pair for pair in itertools.combinations(bots, 2)
                if owner_of[pair[0]] != owner_of[pair[1]]]
    mean = len(matches) / len(may_meet)
    busiest = max(per_pair.items(), key=lambda item: item[1])
    figures = {
        "bots": len(bots),
        "owners": len(OWNERS),
        "class": args.weight_class,
        "openings": args.openings,
        "settled": len(matches),
        "repeats": repeats,
        "not_rated": unrated,
        "rated": len(matches) - unrated,
        "kendall_tau_b": round(tau, 3),
        "kendall_tau_b_by_rating": round(
            kendall_tau_b([rating_of[bot] or 0.0 for bot in bots], [scores[bot] for bot in bots],
                          args.tie), 3),
        "provisional": provisional,
        "tie": args.tie,
        "pairs_that_may_meet": len(may_meet),
        "pairs_met": len(per_pair),
        "mean_per_pair": round(mean, 2),
        "busiest_pair": {"bots": list(busiest[0]), "matches": busiest[1]},
        "busiest_over_mean": round(busiest[1] / mean, 2),
        "never_met": [list(pair) for pair in may_meet if pair not in per_pair],
        "per_pair": {f"{a}-{b}": count for (a, b), count in sorted(per_pair.items())},
        "season_s": round(season_s, 1),
        "round_robin_s": round(round_robin_s, 1),
        "table": [
            {"bot": bot, "owner": owner_of[bot],
             "ladder_rank": sorted(bots, key=lambda b: -conservative[b]).index(bot) + 1,
             "conservative": round(conservative[bot], 1),
             "rating": rating_of[bot] and round(rating_of[bot], 1),
             "deviation": deviation[bot] and round(deviation[bot], 1),
             "round_robin_score": round(scores[bot], 3)}
            for bot in sorted(bots, key=lambda b: -conservative[b])
        ],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"{'bot':<12} {'owner':<6} {'ladder':>6} {'rating-2RD':>10} {'round robin':>11}")
        for row in figures["table"]:
            print(f"{row['bot']:<12} {row['owner']:<6} {row['ladder_rank']:>6} "
                  f"{row['conservative']:>10.1f} {row['round_robin_score']:>11.3f}")
        print(f"Kendall tau-b {tau:.3f} (scores within {args.tie} tied); goal >= 0.8; "
              f"by rating alone {figures['kendall_tau_b_by_rating']:.3f}")
        print(f"provisional at the season's end: {', '.join(provisional) or 'none'}")
        print(f"{len(matches)} settled, {len(matches) - unrated} rated ({repeats} repeats "
              f"and {unrated - repeats} others not rated); "
              f"{len(per_pair)} of {len(may_meet)} pairs met, mean {mean:.1f} per pair, "
              f"busiest {busiest[0][0]}-{busiest[0][1]} {busiest[1]} "
              f"({busiest[1] / mean:.2f}x the mean; goal <= 3x)")
        if figures["never_met"]:
            print("never met: " + ", ".join("-".join(pair) for pair in figures["never_met"]))
        print(f"season {season_s:.0f} s, round robin {round_robin_s:.0f} s")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
