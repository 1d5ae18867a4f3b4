"""Math verifiers: extraction, normalization, equivalence, numeric policy, robustness, thread safety,
the labelled dev set, and the verifiers end to end through a real reward server."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from olmorl.rewards._registry import InvalidInput, load_verifiers
from olmorl.rewards._settings import Settings
from olmorl.rewards.math import equivalent, extract_answer, normalize_answer, parse_number
from olmorl.rewards.math import _normalize, _numbers, _sympy, _verifier

DEV_SET = Path(__file__).parents[1] / "benchmarks" / "data" / "math_dev.jsonl"
VERIFIERS = load_verifiers()


def score(response: str, ground_truth, name: str = "math", **options):
    verifier = VERIFIERS[name](Settings())
    return verifier.score(verifier.make_task(response, ground_truth, options, None))


def same(reference: str, answer: str, rel_tol: float = 1e-6) -> bool:
    return equivalent(normalize_answer(reference), normalize_answer(answer), rel_tol).match


# -- which answer counts ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("So $x=5$. Therefore the answer is $\\boxed{5}$.", "5"),
        ("We get \\fbox{7}.", "7"),
        ("Final Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.", "\\frac{1}{2}"),
        ("Reasoning... 12 then 30.\n#### 72", "72"),
        ("Reasoning.\n<answer>17</answer>", "17"),
        ("Reasoning.\n**Answer:** 42", "42"),
        ("Reasoning.\nAnswer: B", "B"),
        ("The answer is \\boxed{3}. Later: the final answer is \\boxed{4}.", "4"),
        ("<think>the answer is 3</think> The answer is 4.", "4"),
        ("The answer is $\\$5$.", "\\$5"),
    ],
)
def test_extracts_the_last_final_answer(response, expected):
    assert extract_answer(response).answer == expected


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("We add 3 and 4 to get 7 apples.", "no_answer"),  # a number in the reasoning is not an answer
        ("<think>The answer is \\boxed{12}.", "no_answer"),  # unterminated think
        ("<think>The answer is \\boxed{12}.</think> I computed it above.", "no_answer"),
        ("The answer is \\boxed{5}. Wait, that's wrong.", "retracted"),
    ],
)
def test_no_anchor_think_and_retraction(response, reason):
    extraction = extract_answer(response)
    assert extraction.answer is None and extraction.reason == reason
    assert score(response, "12" if "12" in response else "5").reward == 0.0


def test_confirmed_answer_is_not_retracted():
    assert score("The answer is \\boxed{5}. Wait, let me double check: 2+3=5. Yes, correct.", "5").reward == 1.0


@pytest.mark.parametrize(
    ("response", "truth", "reward", "reason"),
    [
        ("The answer is 4 or 6.", "4", 0.0, "hedged"),
        ("The answer is $\\boxed{A}$ or $\\boxed{C}$.", "A", 0.0, "hedged"),
        ("Candidates: $\\boxed{6}$, $\\boxed{8}$, $\\boxed{10}$.", "8", 0.0, "hedged"),
        ("The roots are $\\boxed{6}$ and $\\boxed{8}$.", "6, 8", 1.0, None),
        ("So $x = 1$ or $x = -4$, i.e. \\boxed{x=1 \\text{ or } x=-4}", "1, -4", 1.0, None),
    ],
)
def test_hedges(response, truth, reward, reason):
    result = score(response, truth)
    assert result.reward == reward and result.details["reason"] == reason


def test_strict_math_only_takes_minerva_answers():
    minerva = "Work.\nFinal Answer: The final answer is $42$. I hope it is correct."
    assert score(minerva, "42", "strict_math").reward == 1.0
    assert score("Work. The answer is \\boxed{42}.", "42", "strict_math").reward == 0.0


def test_gsm8k_numeric_verifier():
    assert score("She sells 48 + 24 = 72 clips.\n#### 72", "Natalia sold ... #### 72", "gsm8k").reward == 1.0
    assert score("The answer is $1,200 dollars.", "1200", "gsm8k").reward == 1.0
    assert score("The answer is 71.", "72", "gsm8k").reward == 0.0
    assert score("She sold 48 + 24 = 72 clips.", "72", "gsm8k").details["reason"] == "no_answer"
    verifier = VERIFIERS["gsm8k"](Settings())
    with pytest.raises(InvalidInput, match="not a number"):
        verifier.make_task("#### 3", "three", {}, None)


# -- normalization and equivalence, per category -----------------------------------------------------

@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("1000000", "1,000,000"), ("1000000", "1\\,000\\,000"), ("1234", "1 234"), ("1000", "1{,}000"),
        ("\\frac{3}{4}", "\\tfrac34"), ("0.75", "\\dfrac{3}{4}"), ("\\frac{3}{4}", "6/8"), ("\\frac{5}{2}", "2\\frac{1}{2}"),
        ("\\frac{1}{3}", "0.\\overline{3}"), ("\\frac{1}{7}", "0.142857142857..."), ("50", "50\\%"),
        ("6.02e23", "6.02\\times 10^{23}"), ("6.02e23", "6.02 \\cdot 10^{23}"), ("\\sqrt{8}", "2\\sqrt{2}"),
        ("\\frac{\\pi}{2}", "π/2"), ("e^2", "\\mathrm{e}^2"), ("e^2", "\\exp(2)"), ("3+4i", "3+4\\mathrm{i}"),
        ("\\frac{5}{2}+\\frac{5\\sqrt{3}}{2}i", "5e^{i\\pi/3}"), ("2i", "2(\\cos\\frac{\\pi}{2}+i\\sin\\frac{\\pi}{2})"),
        ("3", "x = 3"), ("x = 3", "3"), ("y = 2x + 1", "2x - y + 1 = 0"), ("x^2+y^2=4", "x^2+y^2-4=0"),
        ("2, 3", "3, 2"), ("\\pm 1", "\\{-1, 1\\}"), ("2\\pm\\sqrt{3}", "2-\\sqrt3, 2+\\sqrt3"),
        ("[0, 1)", "[0,1)"), ("(-\\infty,2]\\cup(3,\\infty)", "(3,\\infty)\\cup(-\\infty,2]"),
        ("\\mathbb{R}", "\\text{all real numbers}"), ("(2, \\infty)", "x > 2"), ("(1,2)", "\\left(1, 2\\right)"),
        ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1 & 2\\\\ 3 & 4\\end{bmatrix}"),
        ("5", "5\\text{ cm}"), ("30", "30^\\circ"), ("5", "\\$5"), ("Monday", "\\text{Monday}"),
        ("B", "\\textbf{(B)}\\ 12"), ("(C)", "C"), ("yes", "\\text{Yes}"), ("-5", "−5"), ("-5", "－5"), ("-3", "–3"),
        ("(x+1)^2", "x^2+2x+1"), ("\\sin 2x", "2\\sin x\\cos x"), ("x^2", "f(x) = x^2"), ("3.5", "3.5."),
        ("1", "\\sin^2 x + \\cos^2 x"), ("\\sin^2(x)+\\cos^2(x)", "1"),  # an identity equal to a constant
    ],
)
def test_equivalent_forms(reference, answer):
    assert same(reference, answer)


@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("\\frac{1}{3}", "0.33"),  # 0.33 is not 1/3
        ("\\frac{1}{3^{79}}", "\\frac{1}{3^{80}}"),  # relative, never absolute
        ("9.1e-30", "9.1e-31"), ("0.000002", "0.000001"),
        ("123456789012345678901", "123456789012345678902"),  # integers exact at any size
        ("3", "2.9999999"), ("1", "1.0000001"),
        ("(1,2)", "(2,1)"), ("[0,1)", "(0,1]"), ("x^2+y^2=4", "(x-1)^2+y^2=4"), ("1, 2", "1, 2, 3"),
        ("3+4i", "3-4i"), ("B", "C"), ("yes", "no"), ("5", "−5"), ("\\sqrt{2}", "1.41"),
        ("1", "x"), ("2", "\\sin^2 x + \\cos^2 x"), ("2x", "2y"),  # a constant is not a non-constant
    ],
)
def test_not_equivalent(reference, answer):
    assert not same(reference, answer)


def test_numeric_policy():
    third = _numbers.ExactNumber(_numbers.Fraction(1, 3))
    assert _numbers.numbers_match(third, parse_number("0.3333333"), 1e-6)
    assert not _numbers.numbers_match(third, parse_number("0.33"), 1e-6)
    assert _numbers.numbers_match(third, parse_number("0.33"), 0.02)  # relative tolerance override
    assert same("3.14", "3.14") and not same("3.14", "3.15")  # rounded-decimal reference
    assert score("The answer is \\boxed{0.33}.", "1/3", rel_tol=0.05).reward == 1.0
    assert score("The answer is \\boxed{0.33}.", "1/3").reward == 0.0


def test_details_name_the_forms_and_the_reason():
    result = score("Work.\n\nThe answer is $\\boxed{\\dfrac{6}{8}}$.", "$\\frac{3}{4}$")
    assert result.reward == 1.0
    assert result.details["extracted"] == "\\dfrac{6}{8}"
    assert result.details["normalized_answer"] == ["\\frac{6}{8}"]
    assert result.details["normalized_reference"] == ["\\frac{3}{4}"]
    assert score("The answer is \\boxed{7}.", "8").details["reason"] == "mismatch"
    assert score("Only reasoning, 8.", "8").details["reason"] == "no_answer"


def test_ground_truth_shapes():
    assert score("The answer is \\boxed{42}.", 42).reward == 1.0
    assert score("The answer is \\boxed{0.5}.", 0.5).reward == 1.0
    assert score("The answer is \\boxed{\\frac{1}{2}}.", ["0.5", "1/2"]).reward == 1.0
    verifier = VERIFIERS["math"](Settings())
    with pytest.raises(InvalidInput):
        verifier.make_task("x", "", {}, None)
    with pytest.raises(InvalidInput, match="options"):
        verifier.make_task("x", "1", {"rel_tol": -1}, None)
    with pytest.raises(InvalidInput, match="ground_truth"):
        verifier.make_task("x", {"a": 1}, {}, None)


# -- robustness ------------------------------------------------------------------------------------

ADVERSARIAL = [
    ("The answer is $\\boxed{10^{10^{10}}}$.", "1", 0.0),
    ("The answer is $\\boxed{10**10**10}$.", "1", 0.0),
    ("The answer is $\\boxed{2^{2^{2^{2^{2^{2}}}}}}$.", "4", 0.0),
    ("The answer is $\\boxed{100000!}$.", "5", 0.0),
    ("The answer is $\\boxed{e^{10^{8}}}$.", "1", 0.0),
    ("The answer is $\\boxed{\\frac{1}{10^{10^{10}}}}$.", "0", 0.0),
    ("x " * 50_000, "3", 0.0),
    ("Step. " * 20_000 + "The answer is $\\boxed{26}$.", "26", 1.0),
    (" ".join(f"\\boxed{{{i}}}" for i in range(3000)), "2999", 0.0),
    ("The answer is \\boxed{" + "{(" * 300, "1", 0.0),
    ("Answer: \\boxed{" + "{" * 500 + "1" + "}" * 500 + "}", "1", 1.0),
    ("The answer is $\\boxed{" + "(" * 40 + "1" + ")" * 40 + "}$", "1", 1.0),
    ("The answer is \x00\x01\x02 \\boxed{4\x07}.", "4", 1.0),
    ("The answer is $\\boxed{" + "(" * 30 + "x+" * 30 + "1}$", "1", 0.0),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("response", "truth", "reward"), ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_inputs_return_a_score(response, truth, reward):
    result = score(response, truth)
    assert result.status == "ok" and result.reward == reward


def test_no_signal_alarm_in_the_package():
    for path in Path(_verifier.__file__).parent.glob("*.py"):
        source = path.read_text()
        assert "import signal" not in source and "signal.alarm" not in source, path


THREAD_CASES = [
    ("The answer is $\\boxed{2\\sqrt{2}}$.", "\\sqrt{8}"),
    ("The answer is $\\boxed{x^2+2x+1}$.", "(x+1)^2"),
    ("The answer is $\\boxed{\\frac{1}{2}}$.", "0.5"),
    ("The answer is $\\boxed{5e^{i\\pi/3}}$.", "\\frac{5}{2}+\\frac{5\\sqrt{3}}{2}i"),
    ("The answer is $\\boxed{2\\sin x\\cos x}$.", "\\sin 2x"),
    ("The answer is $\\boxed{y=2x+1}$.", "2x-y+1=0"),
    ("The answer is $\\boxed{\\sqrt{3}}$.", "\\sqrt{2}"),
    ("The answer is $\\boxed{10^{10^{10}}}$.", "1"),
]


def _clear_caches() -> None:
    for fn in (_sympy.parse_latex, _numbers.parse_number, _normalize.normalize_answer, _verifier.normalize_reference):
        fn.cache_clear()


def test_threads_give_the_same_answers_as_the_main_thread():
    _clear_caches()
    main = [score(r, t).reward for r, t in THREAD_CASES]
    assert main == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    for _ in range(2):
        _clear_caches()
        barrier = threading.Barrier(4)

        def run(case):
            barrier.wait(timeout=30) if threading.current_thread() is not threading.main_thread() else None
            return [score(r, t).reward for r, t in THREAD_CASES]

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(run, range(4)))
        assert all(r == main for r in results)


# -- the labelled development set ----------------------------------------------------------------------

def test_dev_set_accuracy():
    rows = [json.loads(line) for line in DEV_SET.read_text().splitlines() if line.strip()]
    assert len(rows) >= 400 and {r["split"] for r in rows} == {"dev", "heldout"}
    for split in ("dev", "heldout"):
        part = [r for r in rows if r["split"] == split]
        wrong, false_positives = [], 0
        for row in part:
            predicted = score(row["response"], row["ground_truth"]).reward > 0.5
            if predicted != row["label"]:
                wrong.append((row["category"], row["ground_truth"], row["response"][-80:]))
                false_positives += predicted
        assert 1 - len(wrong) / len(part) >= 0.99, (split, wrong)
        assert false_positives / len(part) <= 0.005, (split, wrong)


# -- end to end through the reward server ----------------------------------------------------------------

def test_math_verifiers_through_the_server(reward_server):
    url = reward_server(workers=1)
    items = [
        {"id": "ok", "verifier": "math", "response": "So the answer is $\\boxed{\\frac{1}{2}}$.", "ground_truth": "0.5"},
        {"id": "wrong", "verifier": "math", "response": "The answer is \\boxed{3}.", "ground_truth": "4"},
        {"id": "gsm", "verifier": "gsm8k", "response": "48 + 24 = 72\n#### 72", "ground_truth": "72"},
        {"id": "strict", "verifier": "strict_math",
         "response": "Final Answer: The final answer is $7$. I hope it is correct.", "ground_truth": 7},
        {"id": "tower", "verifier": "math", "response": "The answer is $\\boxed{10^{10^{10}}}$.", "ground_truth": "1"},
        {"id": "bad", "verifier": "math", "response": "The answer is \\boxed{3}.", "ground_truth": ""},
        {"id": "badopt", "verifier": "math", "response": "\\boxed{3}", "ground_truth": "3", "options": {"rel": 1}},
    ]
    reply = httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=60)
    assert reply.status_code == 200
    results = {r["id"]: r for r in reply.json()["results"]}
    assert [results[k]["reward"] for k in ("ok", "wrong", "gsm", "strict", "tower")] == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert results["wrong"]["details"]["reason"] == "mismatch"
    assert results["tower"]["status"] == "ok"
    assert results["bad"]["status"] == "invalid" and "ground_truth" in results["bad"]["error"]
    assert results["badopt"]["status"] == "invalid" and "options" in results["badopt"]["error"]
    listing = {v["name"]: v for v in httpx.get(f"{url}/v1/verifiers", timeout=30).json()}
    assert {"math", "strict_math", "gsm8k"} <= set(listing)
