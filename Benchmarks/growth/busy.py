#!/usr/bin/env python3
"""The busy database's growth benchmark, through the server alone (Benchmarks/growth-busy.sh).

    busy.py URL DATABASE OUT [--others 400] [--grow 12000] [--requests 300]

Fills the database as a running service would, before one diary grows: OTHERS couple
diaries, each made through the API by two users (sign-in, create, join by invite code, one
entry each), then ANALYZE, as autovacuum would after them. Then two couple diaries alike
but for their length: a short one of 20 entries and a long one grown to GROW entries, both
posted through the API by its two members in turn. Then, for each of the home list, the
diary and the timeline's first page (limit=20), REQUESTS requests to each diary's member,
the two sizes alternating, each request timed from the first byte sent to the last read,
on one keep-alive connection: the server's pool then runs the statements as prepared ones,
past their fifth execution, under the plans production runs. Prints one line per endpoint
and appends them to OUT: the median and p90 at each size and the ratio of the medians,
whose goal is 1.2 at most.
"""
import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid


class Client:
    """One keep-alive connection to the server."""

    def __init__(self, url):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def call(self, method, path, token=None, body=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                payload = response.read()
                break
            except (http.client.HTTPException, ConnectionError):
                # A keep-alive connection the server closed: once more on a new one.
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt == 2:
                    raise
        if response.status // 100 != 2:
            sys.exit(f"{method} {path} answered {response.status}: {payload[:300]!r}")
        return json.loads(payload) if payload else None


def sign_in(client, name):
    return client.call("POST", "/v1/auth/dev", body={"name": name})["accessToken"]


def couple(client, tag):
    """Two users and their couple diary: (diary id, first token, second token)."""
    first, second = sign_in(client, f"{tag}-a"), sign_in(client, f"{tag}-b")
    diary = client.call("POST", "/v1/diaries", first, {"id": str(uuid.uuid4()), "name": tag, "type": "couple"})
    client.call("POST", "/v1/diaries/join", second, {"inviteCode": diary["inviteCode"]})
    return diary["id"], first, second


def post(client, diary, token, content, reader=None):
    """Posts an entry; `reader`, the partner's token, reads it (既読), as a couple does."""
    entry = str(uuid.uuid4())
    client.call("POST", f"/v1/diaries/{diary}/entries", token, {"id": entry, "content": content})
    if reader:
        client.call("POST", f"/v1/diaries/{diary}/entries/{entry}/read", reader)


def in_threads(count, work, threads=4):
    """work(i) for i in range(count), on `threads` connections at once."""
    errors = []

    def run(start):
        client = Client(args.url)
        try:
            for i in range(start, count, threads):
                work(client, i)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def timed(client, path, token):
    started = time.perf_counter()
    client.call("GET", path, token)
    return (time.perf_counter() - started) * 1000


parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("database")
parser.add_argument("out")
parser.add_argument("--others", type=int, default=400)
parser.add_argument("--grow", type=int, default=12_000)
parser.add_argument("--requests", type=int, default=300)
args = parser.parse_args()
run = uuid.uuid4().hex[:8]

started = time.time()


def fill(client, i):
    diary, first, second = couple(client, f"busy-{run}-{i}")
    post(client, diary, first, "今日は晴れ", reader=second)
    post(client, diary, second, "こちらは雨", reader=first)


in_threads(args.others, fill)
subprocess.run(["psql", "-X", "-q", "-U", "postgres", "-d", args.database, "-c", "analyze"], check=True)
filled = time.time() - started

setup = Client(args.url)
sizes = {"short": 20, "long": args.grow}
diaries = {size: couple(setup, f"measured-{run}-{size}") for size in sizes}


def grow(size):
    diary, first, second = diaries[size]

    def one(client, i):
        author, reader = (first, second) if i % 2 == 0 else (second, first)
        post(client, diary, author, f"今日の日記 {i}", reader=reader)

    in_threads(sizes[size], one)


grow_started = time.time()
for size in sizes:
    grow(size)
grown = time.time() - grow_started

endpoints = {
    "GET /v1/diaries": lambda diary: "/v1/diaries",
    "GET /v1/diaries/{id}": lambda diary: f"/v1/diaries/{diary}",
    "GET {id}/entries?limit=20": lambda diary: f"/v1/diaries/{diary}/entries?limit=20",
}
client = Client(args.url)
lines = [f"filled {args.others} couple diaries of 2 entries through the API in {filled:.0f} s, then ANALYZE; "
         f"grew a couple diary to {args.grow} entries (and one to 20) through the API in {grown:.0f} s; "
         f"{args.requests} requests per endpoint and size, the sizes alternating, on one keep-alive connection"]
print(lines[0])
lines.append(f"{'endpoint':28} {'p50 20':>8} {'p90 20':>8} {'p50 ' + str(args.grow):>10} {'p90 ' + str(args.grow):>10} {'ratio':>6}")
worst = 0.0
for name, path in endpoints.items():
    times = {size: [] for size in sizes}
    for _ in range(20):  # warm-up: caches, and every prepared statement past its fifth execution
        for size in sizes:
            timed(client, path(diaries[size][0]), diaries[size][1])
    for _ in range(args.requests):
        for size in sizes:
            times[size].append(timed(client, path(diaries[size][0]), diaries[size][1]))
    p50 = {size: statistics.median(times[size]) for size in sizes}
    p90 = {size: statistics.quantiles(times[size], n=10)[-1] for size in sizes}
    ratio = p50["long"] / p50["short"]
    worst = max(worst, ratio)
    lines.append(f"{name:28} {p50['short']:8.2f} {p90['short']:8.2f} {p50['long']:10.2f} {p90['long']:10.2f} {ratio:6.2f}")
    print(lines[-1])
lines.append(f"worst ratio {worst:.2f} (goal <= 1.2): {'met' if worst <= 1.2 else 'MISSED'}")
print(lines[-1])
with open(args.out, "a") as out:
    out.write("\n".join(lines) + "\n")
