"""The `sql` verifier: the pure parts (query extraction, the ORDER BY rule, result comparison), the sandbox
program on real SQLite (read-only, time limit, row limit), and the whole path through a real server with
the real bwrap sandbox and the Python client."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import httpx
import pytest

from olmorl.clients import RewardClient
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings, SqlSettings
from olmorl.rewards.sql import extract_query, orders_result, results_match, values_equal
from olmorl.rewards.sql._verifier import RUNNER

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap missing: run scripts/install-system-deps.sh")

SCHEMA = ("CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER, rating REAL);"
          "CREATE TABLE concert (id INTEGER PRIMARY KEY, singer_id INTEGER, year INTEGER);")
ROWS = {"singer": [[1, "Joe", "France", 52, 4.5], [2, "Ana", "Spain", 29, 3.25], [3, "Li", "France", 41, 4.0]],
        "concert": [{"id": 1, "singer_id": 1, "year": 2014}, {"id": 2, "singer_id": 3, "year": 2015},
                    {"id": 3, "singer_id": 1, "year": 2015}]}
DB = {"schema": SCHEMA, "rows": ROWS}


# -- pure parts ------------------------------------------------------------------------------------------
def test_extract_query_prefers_the_last_sql_block_after_thinking():
    text = "<think>```sql\nSELECT 0\n```</think>Try:\n```sql\nSELECT 1;\n```\nor\n```sql\nSELECT 2;;\n```\n```\nnotes\n```"
    assert extract_query(text) == "SELECT 2"
    assert extract_query("```\nSELECT 3\n```") == "SELECT 3"
    assert extract_query("  SELECT name FROM singer ;  ") == "SELECT name FROM singer"
    assert extract_query("<think>nothing</think>") == ""


@pytest.mark.parametrize(("query", "ordered"), [
    ("SELECT name FROM singer ORDER BY age", True),
    ("select name from singer order\n  by age desc limit 1", True),
    ("SELECT name FROM singer", False),
    ("SELECT name FROM (SELECT * FROM singer ORDER BY age) LIMIT 2", False),  # a subquery's order
    ("SELECT name, rank() OVER (ORDER BY age) FROM singer", False),  # a window's order
    ("SELECT 'order by' FROM singer", False),  # in a string literal
    ('SELECT "order by" FROM singer -- order by age', False),  # a quoted identifier and a comment
    ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),  # a compound query's ORDER BY
])
def test_order_by_rule(query, ordered):
    assert orders_result(query) is ordered


def test_values_and_result_sets():
    assert values_equal(1, 1.0) and values_equal(0.1 + 0.2, 0.3) and values_equal(None, None)
    assert not values_equal(1, 1.001) and not values_equal("1", 1) and not values_equal(None, 0)
    assert not values_equal(True, 1)  # never arises from SQLite, but a bool is not a number here
    ref = [[1, "a"], [2, "b"], [2, "b"]]
    assert results_match(ref, [[2, "b"], [1, "a"], [2, "b"]], ordered=False)
    assert not results_match(ref, [[2, "b"], [1, "a"], [2, "b"]], ordered=True)
    assert not results_match(ref, [[1, "a"], [2, "b"]], ordered=False)  # multiset: counts matter
    assert not results_match(ref, [[1, "a"], [1, "a"], [2, "b"]], ordered=False)
    assert not results_match([[1, "a"]], [["a", 1]], ordered=False)  # columns in order
    assert results_match([[1 / 3, None]], [[0.3333333333, None]], ordered=True)


# -- the sandbox program on real SQLite -------------------------------------------------------------------
def run_program(queries: list[str], timeout_s: float = 2.0, max_rows: int = 100, **db) -> dict:
    request = {"queries": queries, "timeout_s": timeout_s, "max_rows": max_rows, "max_result_bytes": 1 << 20,
               "schema": None, "rows": None, "database": None, **(db or DB)}
    proc = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(request), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_program_runs_both_queries_on_the_built_database():
    report = run_program(["SELECT name FROM singer WHERE country = 'France' ORDER BY id",
                          "SELECT count(*), avg(rating), x'00ff' FROM singer"])
    assert report["results"][0] == {"columns": ["name"], "rows": [["Joe"], ["Li"]]}
    assert report["results"][1]["rows"] == [[3, 3.9166666666666665, {"blob": "00ff"}]]


@pytest.mark.parametrize("query", [
    "INSERT INTO singer VALUES (9, 'X', 'Y', 1, 1.0)",
    "DELETE FROM singer",
    "DROP TABLE singer",
    "ATTACH DATABASE '/tmp/x.db' AS x",
    "PRAGMA query_only = OFF",
    "CREATE TEMP TABLE t AS SELECT 1",
    "WITH d AS (DELETE FROM singer RETURNING id) SELECT * FROM d",
])
def test_program_refuses_every_write(query):
    report = run_program([query, "SELECT count(*) FROM singer"])
    assert report["results"][0]["kind"] in ("denied", "error"), report
    assert report["results"][1]["rows"] == [[3]]  # the database is as it was


def test_program_time_and_row_limits():
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    report = run_program([endless, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) "
                                   "SELECT i FROM n"], timeout_s=0.5, max_rows=100)
    assert report["results"][0] == {"error": "the query ran past its time limit of 0.5 s", "kind": "timeout"}
    assert report["results"][1]["kind"] == "too_many_rows"


def test_program_inserts_rows_of_mixed_shapes_in_order():
    rows = {"t": [[1, "a"], {"name": "b", "id": 2}, {"id": 3}, [4, None]]}
    report = run_program(["SELECT id, name FROM t", "SELECT 1"], schema="CREATE TABLE t (id INTEGER, name TEXT)",
                         rows=rows)
    assert report["results"][0]["rows"] == [[1, "a"], [2, "b"], [3, None], [4, None]]


def test_program_stops_a_result_past_its_byte_budget():
    huge = "SELECT randomblob(50000000)"  # 100 MB as hex
    report = run_program([huge, "SELECT 1"])
    assert report["results"][0] == {"error": "the result has more than 1048576 bytes as JSON", "kind": "too_large"}


def test_program_reports_a_broken_schema():
    assert "setup_error" in run_program(["SELECT 1", "SELECT 1"], schema="CREATE TABLE (", rows=None)
    assert "setup_error" in run_program(["SELECT 1", "SELECT 1"], schema=SCHEMA, rows={"nope": [[1]]})


# -- through the server, in the bwrap sandbox --------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("sql-data")
    conn = sqlite3.connect(data / "music.sqlite")
    conn.execute("PRAGMA journal_mode = WAL")  # as some databases ship; the sandbox still reads it
    conn.executescript(SCHEMA)
    for table, rows in ROWS.items():
        for row in rows:
            values = list(row.values()) if isinstance(row, dict) else row
            conn.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(values))})", values)
    conn.commit()
    conn.close()  # the last connection checkpoints the WAL into the file
    (data / "notes.sqlite").write_text("not a database")
    pending = sqlite3.connect(data / "pending.sqlite")  # held open: its rows stay in the -wal file
    pending.execute("PRAGMA journal_mode = WAL")
    pending.execute("CREATE TABLE t (x)")
    pending.commit()
    log = tmp_path_factory.mktemp("srv") / "server.log"
    with LocalRewardServer(log_path=str(log), workers=1, sandbox=SandboxSettings(parallelism=2),
                           sql=SqlSettings(data_dir=str(data), query_timeout_s=1.0)) as srv:
        yield srv.url, data
    pending.close()


def verify(url: str, items: list[dict]) -> list[dict]:
    r = httpx.post(url + "/v1/verify", json={"items": [dict(item, verifier="sql") for item in items]}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["results"]


@needs_bwrap
def test_scores_through_the_server(server):
    url, _ = server
    assert httpx.get(url + "/readyz", timeout=10).json()["verifiers"]["sql"]["backend"] == "bwrap"
    ordered = dict(DB, query="SELECT name FROM singer ORDER BY age DESC")
    unordered = dict(DB, query="SELECT name, age FROM singer WHERE country = 'France'")
    results = verify(url, [
        {"response": "```sql\nSELECT name FROM singer ORDER BY age DESC;\n```", "ground_truth": ordered},
        {"response": "SELECT name FROM singer ORDER BY age", "ground_truth": ordered},  # wrong order
        {"response": "SELECT name, age FROM singer WHERE country='France' ORDER BY age", "ground_truth": unordered},
        {"response": "SELECT name, age FROM singer", "ground_truth": unordered},
        {"response": "SELEC name FROM singer", "ground_truth": unordered},
        {"response": "DELETE FROM singer", "ground_truth": unordered},
        {"response": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n",
         "ground_truth": unordered},
        {"response": "<think>hmm</think>", "ground_truth": unordered},
        {"response": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
                     "SELECT printf('%.300c', 'x') FROM n", "ground_truth": unordered},  # 1.5 MB: past the cap
        {"response": "SELECT name, age FROM singer WHERE age > 40", "ground_truth": json.dumps(unordered)},
    ])
    assert [(r["status"], r["reward"]) for r in results] == [("ok", 1.0), ("ok", 0.0), ("ok", 1.0), ("ok", 0.0),
                                                             ("ok", 0.0), ("ok", 0.0), ("ok", 0.0), ("ok", 0.0),
                                                             ("ok", 0.0), ("ok", 1.0)]
    assert results[0]["details"]["ordered"] is True and results[2]["details"]["ordered"] is False
    assert results[3]["details"]["reason"] == "mismatch"
    assert results[4]["details"]["reason"] == "sql_error" and "syntax error" in results[4]["details"]["error"]
    assert results[5]["details"]["reason"] == "denied"
    assert results[6]["details"]["reason"] == "timeout"
    assert results[7]["details"]["reason"] == "no_query"
    assert results[8]["details"]["reason"] == "too_large"  # the model's query: ok and 0, never an error


@needs_bwrap
def test_database_file_in_the_data_dir_and_the_python_client(server):
    url, data = server
    truth = {"database": "music.sqlite", "query": "SELECT s.name FROM singer s JOIN concert c ON c.singer_id = s.id "
                                                  "WHERE c.year = 2015"}
    with RewardClient(url) as client:
        right = client.verify_one(verifier="sql", ground_truth=truth,
                                  response="SELECT name FROM singer WHERE id IN (SELECT singer_id FROM concert "
                                           "WHERE year = 2015)")
        wrong = client.verify_one(verifier="sql", ground_truth=truth, response="SELECT name FROM singer")
    assert (right.status, right.reward) == ("ok", 1.0)
    assert (wrong.status, wrong.reward, wrong.details["candidate_rows"]) == ("ok", 0.0, 3)
    # the file is untouched by a write attempt, and the next item sees the same rows
    verify(url, [{"response": "DROP TABLE singer", "ground_truth": truth}])
    assert sqlite3.connect(data / "music.sqlite").execute("SELECT count(*) FROM singer").fetchone() == (3,)


@needs_bwrap
@pytest.mark.parametrize(("truth", "error"), [
    ({"query": "SELECT 1"}, "either `schema`"),
    ({"query": "SELECT 1", "schema": SCHEMA, "database": "music.sqlite"}, "not both"),
    ({"query": "SELECT 1", "rows": ROWS, "database": "music.sqlite"}, "rows needs a `schema`"),
    ({"query": "SELECT 1", "database": "../../etc/passwd"}, "outside sql.data_dir"),
    ({"query": "SELECT 1", "database": "missing.sqlite"}, "no such file"),
    ({"query": "SELECT 1", "database": "notes.sqlite"}, "not a SQLite 3 database"),
    ({"query": "SELECT 1", "database": "pending.sqlite"}, "write-ahead log"),
    ({"query": "SELECT nope FROM singer", "schema": SCHEMA}, "the reference query failed"),
    ({"query": "SELECT 1", "schema": "CREATE TABLE ("}, "could not be built"),
    ({"query": "", "schema": SCHEMA}, "query"),
])
def test_invalid_ground_truth_is_invalid_never_a_zero(server, truth, error):
    url, _ = server
    result, good = verify(url, [{"response": "SELECT 1", "ground_truth": truth},
                                {"response": "SELECT count(*) FROM singer", "ground_truth": dict(DB, query="SELECT 3")}])
    assert (result["status"], result["reward"]) == ("invalid", None), result
    assert error in result["error"]
    assert (good["status"], good["reward"]) == ("ok", 1.0)  # one bad item never fails the batch
