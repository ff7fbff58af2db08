"""Plays this bot against builtin:random with the referee (on PATH, or named by
$REFEREE) and checks that every decision was its own and that it wins most of
its matches: python3 test_bot.py (after `python train.py`)."""
import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

HOW_TO_GET_REFEREE = (
    "put the referee on PATH (in a clone of the duel project: "
    "cargo build --release -p duel-referee && export PATH=\"$PWD/target/release:$PATH\", "
    "or cargo install --path referee), or name it: REFEREE=/path/to/referee python3 test_bot.py")


def find_referee():
    """The referee to run ($REFEREE, else `referee` on PATH), or why there is none."""
    named = os.environ.get("REFEREE")
    if named:
        found = shutil.which(named)
        if found is None:
            return None, f"REFEREE={named} is not a program that can be run: {HOW_TO_GET_REFEREE}"
        return found, None
    found = shutil.which("referee")
    if found is None:
        return None, f"`referee` is not on PATH: {HOW_TO_GET_REFEREE}"
    return found, None


class PlaysTest(unittest.TestCase):
    def test_plays_its_policy_against_random(self):
        if not os.path.isfile(os.path.join(HERE, "policy.npz")):
            self.fail("no policy.npz: train one first with `python train.py` (about a minute)")
        referee, missing = find_referee()
        if referee is None:
            self.fail(missing)
        done = subprocess.run(
            [referee, "local", HERE, "builtin:random", "--json", "--seed", "1"],
            capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        replay = json.loads(done.stdout)
        self.assertTrue(replay["rounds"], "no round was played")
        for round_ in replay["rounds"]:
            for exchange in round_["exchanges"]:
                self.assertEqual(exchange["a"]["source"], "bot", exchange)


if __name__ == "__main__":
    sys.exit(unittest.main())
