"""The program the `sql` verifier runs in the code sandbox (stdlib only; its source is sent as the program).

stdin: one JSON object
    {"schema": str | null, "rows": {table: [[...] | {...}]} | null, "database": base64 | null,
     "queries": [reference, candidate], "timeout_s": float, "max_rows": int, "max_result_bytes": int}
stdout: one JSON line, {"setup_error": str} or {"results": [result, result]}, where a result is
    {"columns": [...], "rows": [[...]]} or {"error": str, "kind": "timeout" | "denied" | "too_many_rows" | "too_large" | "error"}.

The database lives in memory: built from the schema and rows, or deserialized from the file's bytes.
Before the queries run it is made read-only twice over: `PRAGMA query_only` and an authorizer that allows
reading and nothing else (no writes, ATTACH, PRAGMA or transactions). Each query has its own deadline,
enforced by a progress handler that interrupts it.
"""

import base64
import itertools
import json
import sqlite3
import sys
import time

_READ_ONLY = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


def _quoted(name):
    return '"' + str(name).replace('"', '""') + '"'


def _build(request):
    conn = sqlite3.connect(":memory:", isolation_level=None)
    if request.get("database") is not None:
        data = bytearray(base64.b64decode(request["database"]))
        if data[18:20] == b"\x02\x02":  # a WAL-mode file: read as rollback-journal (memory databases have no WAL)
            data[18:20] = b"\x01\x01"
        conn.deserialize(bytes(data))
        return conn
    conn.executescript(request.get("schema") or "")
    conn.execute("BEGIN")
    for table, rows in (request.get("rows") or {}).items():
        # consecutive rows of one shape (the same columns, or the same length) go in one executemany
        for shape, group in itertools.groupby(rows, lambda row: tuple(row) if isinstance(row, dict) else len(row)):
            if isinstance(shape, tuple):
                columns = " (" + ", ".join(_quoted(c) for c in shape) + ")"
                values = [list(row.values()) for row in group]
            else:
                columns, values = "", [list(row) for row in group]
            marks = ", ".join("?" for _ in range(len(shape) if isinstance(shape, tuple) else shape))
            conn.executemany(f"INSERT INTO {_quoted(table)}{columns} VALUES ({marks})", values)
    conn.execute("COMMIT")
    return conn


def _value(value):
    return {"blob": value.hex()} if isinstance(value, bytes) else value


def _run(conn, query, timeout_s, max_rows, max_bytes):
    deadline = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    try:
        cursor = conn.execute(query)
        columns = [d[0] for d in cursor.description or ()]
        rows, size = [], len(json.dumps(columns))
        while True:
            batch = cursor.fetchmany(100)
            if not batch:
                break
            batch = [[_value(v) for v in row] for row in batch]
            rows.extend(batch)
            size += len(json.dumps(batch))  # counted as it grows: a huge result stops before it fills memory
            if len(rows) > max_rows:
                return {"error": f"the query returned more than {max_rows} rows", "kind": "too_many_rows"}
            if size > max_bytes:  # both results must fit the sandbox's output cap
                return {"error": f"the result has more than {max_bytes} bytes as JSON", "kind": "too_large"}
        return {"columns": columns, "rows": rows}
    except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError, MemoryError) as exc:
        message = str(exc)
        if time.monotonic() > deadline and "interrupted" in message:
            return {"error": f"the query ran past its time limit of {timeout_s:g} s", "kind": "timeout"}
        kind = "denied" if "not authorized" in message or "readonly" in message else "error"
        return {"error": f"{type(exc).__name__}: {message}", "kind": kind}
    finally:
        conn.set_progress_handler(None, 0)


def main():
    request = json.loads(sys.stdin.buffer.read())
    try:
        conn = _build(request)
        conn.execute("PRAGMA query_only = ON")
    except (sqlite3.Error, sqlite3.Warning, ValueError, TypeError, OverflowError) as exc:
        print(json.dumps({"setup_error": f"{type(exc).__name__}: {exc}"}))
        return
    conn.set_authorizer(lambda action, *_: sqlite3.SQLITE_OK if action in _READ_ONLY else sqlite3.SQLITE_DENY)
    results = [_run(conn, query, request["timeout_s"], request["max_rows"], request["max_result_bytes"])
               for query in request["queries"]]
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main()
