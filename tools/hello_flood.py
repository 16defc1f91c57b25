#!/usr/bin/env python3
"""An established client's round-trip time while the server takes a flood of Hellos.

Runs the `echo` example's server and client (built from two trees: "old" and "new") on
loopback, measures the client's round trips (one ping every 10 ms) first on a quiet server,
then while flooder processes send valid Hellos to the same server as fast as they can, and
repeats old/new interleaved. The flood starts 0.3 s after the client, once it is connected
(a client that connects during a flood above the server's stateless budget may get no
Challenge until it ends: that is the budget working). Prints p50/p99/max per run and the
flood rate.

    cargo build --release -p thinwire --example echo
    python3 tools/hello_flood.py --new target/release/examples/echo \\
        --old /tmp/old-target/release/examples/echo --old-version 1 --pairs 3 [--flooders 2]

Loopback only; every process is bounded in time and killed at the end.
"""
import argparse
import multiprocessing as mp
import os
import re
import socket
import struct
import subprocess
import sys
import time


def hello(version: int) -> bytes:
    cid = os.urandom(8)
    body = bytes([0xC0]) + struct.pack(">I", version) + bytes([len(cid)]) + cid
    body += os.urandom(8) + os.urandom(8)
    return body + bytes(64 - len(body))


def flood(port: int, version: int, seconds: float, counter) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    packet = hello(version)
    addr = ("127.0.0.1", port)
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(256):
            try:
                s.sendto(packet, addr)
                sent += 1
            except BlockingIOError:
                pass
    counter.value = sent


def run(binary: str, version: int, port: int, flood_s: float, pings: int, flooders: int) -> dict:
    server = subprocess.Popen(
        [binary, "--serve", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    key = None
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            m = re.search(r"server key: ([0-9a-f]{64})", line)
            if m:
                key = m.group(1)
                break
            if "echo server on" in line and version == 1:
                break
        client_cmd = [binary, "--connect", f"127.0.0.1:{port}", "--count", str(pings),
                      "--interval-ms", "10"]
        if key:
            client_cmd += ["--key", key]
        counters = [mp.Value("q", 0) for _ in range(flooders if flood_s > 0 else 0)]
        procs = [mp.Process(target=flood, args=(port, version, flood_s, c)) for c in counters]
        client = subprocess.Popen(client_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        time.sleep(0.3)
        for p in procs:
            p.start()
        stdout, stderr = client.communicate(timeout=flood_s + 60)
        out = subprocess.CompletedProcess(client_cmd, client.returncode, stdout, stderr)
        if "round trips" not in out.stdout:
            print(f"client failed: {out.stderr.strip()[-300:]}", file=sys.stderr)
        for p in procs:
            p.join(flood_s + 5)
            if p.is_alive():
                p.kill()
        line = next((l for l in out.stdout.splitlines() if "round trips" in l), out.stdout)
        nums = dict(re.findall(r"(p50|p90|p99|max|min) (\d+) µs", line))
        trips = re.search(r"(\d+) round trips \((\d+) unanswered\)", line)
        return {
            "p50": int(nums.get("p50", -1)),
            "p99": int(nums.get("p99", -1)),
            "max": int(nums.get("max", -1)),
            "trips": int(trips.group(1)) if trips else -1,
            "lost": int(trips.group(2)) if trips else -1,
            "flood_rate": sum(c.value for c in counters) / flood_s if flood_s > 0 else 0,
        }
    finally:
        server.kill()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--new", required=True)
    ap.add_argument("--old")
    ap.add_argument("--new-version", type=int, default=2)
    ap.add_argument("--old-version", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--flooders", type=int, default=1, help="flooding processes")
    args = ap.parse_args()
    pings = int(args.seconds * 1000 / 10 * 0.9)
    trees = [("new", args.new, args.new_version)]
    if args.old:
        trees.insert(0, ("old", args.old, args.old_version))
    port = 7790
    for i in range(args.pairs):
        for name, binary, version in trees:
            for flood_s in (0, args.seconds):
                port += 1
                r = run(binary, version, port, flood_s, pings if flood_s else 300, args.flooders)
                label = "flood" if flood_s else "quiet"
                print(f"pair {i + 1} {name:3} {label}: p50 {r['p50']} µs, p99 {r['p99']} µs, "
                      f"max {r['max']} µs, {r['trips']} round trips ({r['lost']} unanswered), "
                      f"flood {r['flood_rate'] / 1000:.0f}k Hellos/s", flush=True)


if __name__ == "__main__":
    main()
