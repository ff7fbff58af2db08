"""Plays this bot against builtin:counter with the referee's built-in model
(offline), then checks the replay and its transcript: python3 test_bot.py
(needs `referee` on PATH, or named by $REFEREE)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
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
    def test_thinks_with_the_house_model_and_the_transcript_verifies(self):
        referee, missing = find_referee()
        if referee is None:
            self.fail(missing)
        with tempfile.TemporaryDirectory() as folder:
            replay = os.path.join(folder, "match.json")
            transcript = os.path.join(folder, "transcript.json")
            done = subprocess.run(
                [referee, "local", HERE, "builtin:counter", "--seed", "1",
                 "--model-url", "builtin:house", "--replay", replay, "--transcript", transcript],
                capture_output=True, text=True, check=False)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(replay) as file:
                match = json.load(file)
            calls = [call for round_ in match["rounds"] for exchange in round_["exchanges"]
                     for call in exchange["a"].get("calls", [])]
            self.assertTrue(calls, "the bot never called the model")
            self.assertTrue(all(call["outcome"] == "ok" for call in calls), calls)
            verify = subprocess.run(
                [referee, "replay", "verify", replay, "--transcript", transcript],
                capture_output=True, text=True, check=False)
            self.assertEqual(verify.returncode, 0, verify.stderr)


if __name__ == "__main__":
    sys.exit(unittest.main())
