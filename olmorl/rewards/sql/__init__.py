"""The `sql` verifier (text-to-SQL): candidate and reference queries on one SQLite database, in the sandbox."""

from olmorl.rewards.sql._compare import extract_query, orders_result, results_match, values_equal
from olmorl.rewards.sql._verifier import SqlGroundTruth, SqlVerifier

__all__ = [
    "SqlGroundTruth",
    "SqlVerifier",
    "extract_query",
    "orders_result",
    "results_match",
    "values_equal",
]
