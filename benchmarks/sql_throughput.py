"""Throughput of the `sql` verifier through a real server and the bwrap sandbox (one sandbox run per item:
build the database, run the reference and the candidate, compare on the server).

Cases: a Spider-sized database given as schema + rows in the ground truth (3 tables, ~30 rows), the same
with 2,000 rows in its main table, and a 5 MB database file in `sql.data_dir`. Half the candidates are right,
a quarter wrong, a quarter syntax errors. Prints items/s and per-request latency, with the machine's load
average before and after each case (the sandbox slots share the cores with whatever else runs).

    python benchmarks/sql_throughput.py [--items 300] [--batch 64] [--clients 4] [--parallelism N]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import percentile  # noqa: E402

from olmorl.rewards.service._local import LocalRewardServer  # noqa: E402
from olmorl.rewards._settings import SandboxSettings, SqlSettings  # noqa: E402

SCHEMA = ("CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);"
          "CREATE TABLE concert (id INTEGER PRIMARY KEY, singer_id INTEGER, year INTEGER);"
          "CREATE TABLE stadium (id INTEGER PRIMARY KEY, name TEXT, capacity INTEGER);")
QUERIES = [  # (reference, a right candidate, a wrong candidate)
    ("SELECT count(*) FROM singer WHERE country = 'France'",
     "SELECT COUNT(id) FROM singer WHERE country='France'", "SELECT count(*) FROM singer"),
    ("SELECT name FROM singer ORDER BY age DESC LIMIT 3",
     "SELECT name FROM singer ORDER BY age DESC LIMIT 3", "SELECT name FROM singer ORDER BY age LIMIT 3"),
    ("SELECT s.country, count(*) FROM singer s JOIN concert c ON c.singer_id = s.id GROUP BY s.country",
     "SELECT country, count(*) FROM concert JOIN singer ON singer.id = concert.singer_id GROUP BY 1 ORDER BY 2",
     "SELECT country, count(*) FROM singer GROUP BY country"),
    ("SELECT avg(capacity) FROM stadium", "SELECT sum(capacity) * 1.0 / count(*) FROM stadium",
     "SELECT max(capacity) FROM stadium"),
]


def rows(singers: int, rng: random.Random) -> dict[str, list[list]]:
    countries = ["France", "Spain", "Japan", "Peru", "Kenya"]
    return {"singer": [[i, f"s{i}", rng.choice(countries), rng.randint(18, 80)] for i in range(singers)],
            "concert": [[i, rng.randrange(singers), rng.randint(2000, 2024)] for i in range(singers // 2)],
            "stadium": [[i, f"st{i}", rng.randint(1000, 90000)] for i in range(10)]}


def make_items(n: int, truth: dict, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    items = []
    for i in range(n):
        reference, right, wrong = rng.choice(QUERIES)
        kind = rng.random()
        response = right if kind < 0.5 else wrong if kind < 0.75 else right.replace("SELECT", "SELEC", 1)
        items.append({"id": str(i), "verifier": "sql", "response": f"```sql\n{response}\n```",
                      "ground_truth": dict(truth, query=reference)})
    return items


def write_database(path: Path, singers: int) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    for table, table_rows in rows(singers, random.Random(1)).items():
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(table_rows[0]))})", table_rows)
    conn.commit()
    conn.close()


def measure(url: str, items: list[dict], batch: int, clients: int) -> tuple[float, list[float]]:
    with httpx.Client(timeout=600) as client:
        client.post(f"{url}/v1/verify", json={"items": items[:4]}).raise_for_status()  # warm-up
        latencies: list[float] = []

        def post(part: list[dict]) -> None:
            sent = time.perf_counter()
            results = client.post(f"{url}/v1/verify", json={"items": part}).json()["results"]
            bad = [r for r in results if r["status"] != "ok"]
            assert not bad, bad[:2]
            latencies.append(time.perf_counter() - sent)

        start = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(post, [items[i:i + batch] for i in range(0, len(items), batch)]))
        return len(items) / (time.perf_counter() - start), latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--parallelism", type=int, default=os.cpu_count() or 1, help="sandbox slots")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        write_database(Path(data) / "big.sqlite", 60_000)
        size_mb = (Path(data) / "big.sqlite").stat().st_size / 2**20
        cases: list[tuple[str, dict]] = [("schema + rows, 30 singers", {"schema": SCHEMA, "rows": rows(30, random.Random(0))}),
                 ("schema + rows, 2,000 singers", {"schema": SCHEMA, "rows": rows(2000, random.Random(0))}),
                 (f"database file, {size_mb:.1f} MB", {"database": "big.sqlite"})]
        print(f"sql verifier: {args.items} items per case, batches of {args.batch}, {args.clients} clients, "
              f"{args.parallelism} sandbox slots, {os.cpu_count()} CPUs")
        print("| case | items/s | request p50 s | request p95 s | load avg before | load avg after |")
        print("|---|---|---|---|---|---|")
        with LocalRewardServer(workers=1, log_level="warning", sandbox=SandboxSettings(parallelism=args.parallelism),
                               sql=SqlSettings(data_dir=data)) as server:
            for label, truth in cases:
                before = os.getloadavg()[0]
                rate, latencies = measure(server.url, make_items(args.items, truth), args.batch, args.clients)
                after = os.getloadavg()[0]
                print(f"| {label} | {rate:.1f} | {percentile(latencies, 0.5):.2f} | {percentile(latencies, 0.95):.2f} "
                      f"| {before:.2f} | {after:.2f} |", flush=True)


if __name__ == "__main__":
    main()
