"""Plays this bot against builtin:counter with the referee's built-in model
(offline), then checks the replay and its transcript: python3 test_bot.py
(needs `referee` on PATH, or named by $REFEREE)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class PlaysTest(unittest.TestCase):
    def test_thinks_with_the_house_model_and_the_transcript_verifies(self):
        referee = os.environ.get("REFEREE", "referee")
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
