"""Math verifiers: final-answer extraction and SymPy-based equivalence (`math`, `strict_math`, `gsm8k`).

Importing this package registers the verifiers. The building blocks are public for reuse and tests.
"""

from olmorl.rewards.math._equivalence import Verdict, equivalent
from olmorl.rewards.math._extract import Extraction, extract_answer, strip_thinking
from olmorl.rewards.math._normalize import normalize_answer
from olmorl.rewards.math._numbers import ExactNumber, numbers_match, parse_number
from olmorl.rewards.math._verifier import (
    GSM8KVerifier,
    MathOptions,
    MathVerifier,
    StrictMathVerifier,
    normalize_reference,
)

__all__ = [
    "ExactNumber",
    "Extraction",
    "GSM8KVerifier",
    "MathOptions",
    "MathVerifier",
    "StrictMathVerifier",
    "Verdict",
    "equivalent",
    "extract_answer",
    "normalize_answer",
    "normalize_reference",
    "numbers_match",
    "parse_number",
    "strip_thinking",
]
