"""What several test files share: the referee binary the workspace's tests
built, run with its home (signing key, caches) inside the test's folder."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def referee_binary() -> str:
    """The referee the workspace's tests built (scripts/test.sh runs pytest
    after nextest), or $DUEL_REFEREE, or `referee` on PATH."""
    named = os.environ.get("DUEL_REFEREE")
    if named:
        return named
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("debug", "release"):
        candidate = target / profile / "referee"
        if candidate.is_file():
            return str(candidate)
    on_path = shutil.which("referee")
    if on_path:
        return on_path
    message = "no referee binary: build it (cargo build -p duel-referee) or name it with DUEL_REFEREE"
    if os.environ.get("DUEL_TEST_SERVICES") == "required":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def referee(tmp_path_factory):
    """run(*args, env=None, timeout=120): the referee with `args`, its output
    captured as text. The referee signs what it plays with its key and keeps
    caches under its home: both stay inside the test's folder."""
    binary = referee_binary()
    home = tmp_path_factory.mktemp("referee-home")
    base = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"))
    base.pop("DUEL_SIGNING_KEY_FILE", None)

    def run(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [binary, *args],
            capture_output=True,
            text=True,
            env={**base, **(env or {})},
            timeout=timeout,
            check=False,
        )

    run.binary = binary
    run.environment = base
    return run
