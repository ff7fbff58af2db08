#!/usr/bin/env python3
"""The hardening probe of the model gateway, rerun against the real `referee`.

An endpoint bot (gRPC, Python) that attacks the gateway's OpenAI face during
its own decisions, and an OpenAI-compatible upstream of our own, both on
loopback, play `referee local` against a WASM fighter. Each attack is sent in
every decision the attacker is asked, all at once, and the bot answers JAB at
once (its calls still running):

  names    3 calls naming a model of 1,000,000 bytes
  flood    16 calls of 512 KiB of one letter (or --flood-bytes)
  spaces   one call of 1,000,000 spaces
  roles    one call of 256 messages with 32-byte roles
  stops    one call with 4 stop strings of 200 KB

With --serve, the same matches are played through one `referee serve`
(RunMatch) instead, and the report adds the server's peak and final memory and
the CPU it spent in the two seconds after each RunMatch returned (a count
that outlives its match shows there).

Each run is made twice per repetition, with the attacks and without them
(the same bot answering JAB with no calls), alternated, and reports for each:
the referee's peak memory (GNU time), the replay's size and whether it
verifies, and the opponent's decision latencies (p50, p99, max over every
decision of every repetition); and what the upstream received: every role it
saw, the longest stop string, and the texts' bytes, checked against what the
replay charged.

  target/python-llm/venv/bin/python scripts/probe-gateway.py \\
      --referee target/release/referee --opponent target/bots/counter.wasm [--runs 5]

The environment comes from scripts/setup/python-llm.sh (grpcio, grpcio-tools)
and the stubs from scripts/setup/python-endpoint-bot.sh. Loopback only.
"""

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "python-endpoint-bot", "generated"))

import grpc  # noqa: E402
from duel.v1 import bot_pb2, bot_pb2_grpc, referee_pb2, referee_pb2_grpc  # noqa: E402

ROLES = {"system", "user", "assistant", "tool", "developer"}


def bodies(flood_bytes):
    user = lambda content, **extra: json.dumps(  # noqa: E731
        {"messages": [{"role": "user", "content": content}], **extra}
    ).encode()
    made = {
        "names": [user("hi", model="m" * 1_000_000)] * 3,
        "flood": [user("a" * flood_bytes, max_tokens=1)] * 16,
        "spaces": [user(" " * 1_000_000)],
        "roles": [
            json.dumps(
                {"messages": [{"role": f"{i:0>32}", "content": ""} for i in range(256)]}
            ).encode()
        ],
        "stops": [user("hi", stop=["s" * 200_000] * 4)],
    }
    return [body for group in made.values() for body in group]


class Attacker(bot_pb2_grpc.BotServicer):
    def __init__(self, attack, flood_bytes):
        self.bodies = bodies(flood_bytes) if attack else []
        self.statuses = []
        self.lock = threading.Lock()

    def Hello(self, request, context):
        return bot_pb2.HelloResponse(name="probe", version="47", rulesets=["1.0.0"])

    def _post(self, base, token, body):
        host, port = re.match(r"http://([^:/]+):(\d+)", base).groups()
        status = 0
        try:
            connection = http.client.HTTPConnection(host, int(port), timeout=30)
            connection.request(
                "POST",
                "/v1/chat/completions",
                body=body,
                headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
            )
            status = connection.getresponse().status
            connection.close()
        except OSError:
            pass
        with self.lock:
            self.statuses.append(status)

    def Decide(self, request, context):
        for body in self.bodies:
            threading.Thread(
                target=self._post,
                args=(request.openai_base_url, request.inference_token, body),
                daemon=True,
            ).start()
        return bot_pb2.DecideResponse(action=bot_pb2.ACTION_JAB)


class Upstream(BaseHTTPRequestHandler):
    seen = []
    lock = threading.Lock()

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length))
        with Upstream.lock:
            Upstream.seen.append(
                {
                    "roles": [message["role"] for message in request["messages"]],
                    "text_bytes": sum(len(message["content"].encode()) for message in request["messages"]),
                    "stop_bytes": max([len(stop.encode()) for stop in request.get("stop") or []] + [0]),
                }
            )
        answer = json.dumps(
            {
                "id": "chatcmpl-probe",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "JAB"}, "finish_reason": "stop"}],
            }
        ).encode()
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
        except OSError:
            # The referee gave up on the call (its decision ended first).
            pass

    def log_message(self, *args):
        pass


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))]


def play(args, attack, bot_port, model_port, replay_path):
    command = [
        "/usr/bin/time", "-f", "%M %U %S",
        args.referee, "local", f"grpc://127.0.0.1:{bot_port}", args.opponent,
        "--class", "heavy", "--seed", "47", "--json", "--replay", replay_path,
        "--model-url", f"http://127.0.0.1:{model_port}/v1", "--model", "probe-model",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        sys.exit(f"referee local failed ({'attack' if attack else 'quiet'}): {done.stderr[-2000:]}")
    peak_kib, user_s, system_s = done.stderr.strip().splitlines()[-1].split()
    return summary(args, replay_path, int(peak_kib) * 1024 / 1e6, float(user_s) + float(system_s))


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Served:
    """One `referee serve` for every run of --serve."""

    def __init__(self, args, model_port):
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [
                args.referee, "serve", "--listen", f"127.0.0.1:{self.port}", "--allow-private-endpoints",
                "--model-url", f"http://127.0.0.1:{model_port}/v1", "--model", "probe-model",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.channel = grpc.insecure_channel(
            f"127.0.0.1:{self.port}",
            options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)],
        )
        grpc.channel_ready_future(self.channel).result(timeout=60)
        self.stub = referee_pb2_grpc.RefereeStub(self.channel)
        self.after_cpu_s = {True: [], False: []}

    def play(self, args, attack, bot_port, replay_path):
        response = self.stub.RunMatch(
            referee_pb2.RunMatchRequest(
                bot_a=f"grpc://127.0.0.1:{bot_port}", bot_b=args.opponent,
                **{"class": 3}, seed=47,
            ),
            timeout=900,
        )
        before = proc_cpu_s(self.process.pid)
        import time

        time.sleep(2)
        self.after_cpu_s[attack].append(proc_cpu_s(self.process.pid) - before)
        with open(replay_path, "w") as file:
            file.write(response.replay_json)

    def close(self):
        peak, now = proc_status(self.process.pid, "VmHWM"), proc_status(self.process.pid, "VmRSS")
        self.process.terminate()
        self.process.wait(timeout=90)
        return peak, now


def summary(args, replay_path, peak_mb, cpu_s):
    verified = subprocess.run(
        [args.referee, "replay", "verify", replay_path], capture_output=True, text=True
    ).returncode == 0
    with open(replay_path, "rb") as file:
        raw = file.read()
    replay = json.loads(raw)
    latencies, calls, models, charged = [], 0, 0, 0
    for round_ in replay["rounds"]:
        for exchange in round_["exchanges"]:
            opponent = exchange["b"]
            latencies.append(opponent.get("latency_us", opponent["latency_ms"] * 1000) / 1000)
            for call in exchange["a"].get("calls", []):
                calls += 1
                models = max(models, len(call["model"].encode()))
                charged += call["prompt_tokens"]
    return {
        "peak_mb": peak_mb,
        "cpu_s": cpu_s,
        "replay_bytes": len(raw),
        "verified": verified,
        "latencies": latencies,
        "calls": calls,
        "longest_model": models,
        "charged_prompt_tokens": charged,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--referee", default=os.path.join(ROOT, "target", "release", "referee"))
    parser.add_argument("--opponent", default=os.path.join(ROOT, "target", "bots", "counter.wasm"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--flood-bytes", type=int, default=512 * 1024)
    parser.add_argument("--serve", action="store_true", help="play through one `referee serve` (RunMatch)")
    parser.add_argument(
        "--control", action="store_true", help="no attacks in either arm: the noise between two quiet arms"
    )
    args = parser.parse_args()

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    results = {True: [], False: []}
    attackers = {}
    served = Served(args, upstream.server_address[1]) if args.serve else None
    for run in range(args.runs):
        for attack in (True, False) if run % 2 == 0 else (False, True):
            attacker = Attacker(attack and not args.control, args.flood_bytes)
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
            bot_pb2_grpc.add_BotServicer_to_server(attacker, server)
            port = server.add_insecure_port("127.0.0.1:0")
            server.start()
            with tempfile.TemporaryDirectory() as folder:
                replay_path = os.path.join(folder, "m.json")
                if served:
                    served.play(args, attack, port, replay_path)
                    results[attack].append(summary(args, replay_path, 0.0, 0.0))
                else:
                    results[attack].append(play(args, attack, port, upstream.server_address[1], replay_path))
            server.stop(grace=None)
            attackers.setdefault(attack, []).append(attacker)

    print(f"| run | peak memory | CPU | replay | verifies | calls recorded | longest model name | opponent p50 / p99 / max (ms) |")
    print("|---|---:|---:|---:|---|---:|---:|---|")
    for attack in (False, True):
        runs = results[attack]
        latencies = [value for run in runs for value in run["latencies"]]
        print(
            f"| {('quiet again' if args.control else 'attacks') if attack else 'quiet'} ×{len(runs)} "
            + (
                "| (the server's, below) | — "
                if args.serve
                else f"| {max(run['peak_mb'] for run in runs):.0f} MB (max) "
                f"| {statistics.median(run['cpu_s'] for run in runs):.2f} s (median) "
            )
            + f"| {max(run['replay_bytes'] for run in runs):,} B (max) "
            f"| {all(run['verified'] for run in runs)} "
            f"| {sum(run['calls'] for run in runs)} "
            f"| {max(run['longest_model'] for run in runs)} B "
            f"| {percentile(latencies, 0.5):.2f} / {percentile(latencies, 0.99):.2f} / {max(latencies):.2f} |"
        )
    if served:
        peak, now = served.close()
        after = {attack: max(values) for attack, values in served.after_cpu_s.items()}
        print(
            f"\nreferee serve: peak {peak:.0f} MB, {now:.0f} MB at the end; CPU in the 2 s after RunMatch "
            f"returned (max): {after[True]:.2f} s with the attacks, {after[False]:.2f} s without"
        )
    statuses = [status for attacker in attackers.get(True, []) for status in attacker.statuses]
    counts = {status: statuses.count(status) for status in sorted(set(statuses))}
    seen = Upstream.seen
    print(f"\nattacker's HTTP statuses: {counts}")
    print(
        f"upstream: {len(seen)} calls; roles seen {sorted({role for call in seen for role in call['roles']})}; "
        f"longest stop string {max([call['stop_bytes'] for call in seen] + [0])} B; "
        f"largest prompt {max([call['text_bytes'] for call in seen] + [0]):,} B"
    )
    stray = [role for call in seen for role in call["roles"] if role not in ROLES]
    if stray or not all(run["verified"] for run in results[True]):
        sys.exit("the upstream saw undocumented roles, or a replay did not verify")


if __name__ == "__main__":
    main()
