"""Per-constraint satisfy/violate cases, `fixed` deviations, ground truth, modes, offline use."""

from __future__ import annotations

import socket

import pytest

from olmorl.rewards import InvalidInput
from olmorl.rewards._settings import Settings
from olmorl.rewards.instructions import CONSTRAINTS, IFEvalVerifier, parse_ground_truth
from olmorl.rewards.instructions._text import split_sentences_regex, word_tokenize
from tests._ifeval_cases import CASES, FIXED_CASES, REFERENCE_ONLY

VERIFIER = IFEvalVerifier(Settings())


def _check(instruction_id: str, kwargs: dict, text: str, semantics: str = "reference", mode: str = "strict") -> float:
    gt = [{"instruction_id": [instruction_id], "kwargs": [kwargs]}]
    task = VERIFIER.make_task(text, gt, {"mode": mode, "semantics": semantics}, None)
    return VERIFIER.score(task).reward


def test_every_id_has_cases():
    assert len(CONSTRAINTS) == 112
    assert {c[0] for c in CASES} == set(CONSTRAINTS)


SATISFY_VIOLATE = [
    (semantics, *case)
    for semantics in ("reference", "fixed")
    for case in CASES
    if semantics == "reference" or case[0] not in REFERENCE_ONLY
]


@pytest.mark.parametrize(
    ("semantics", "instruction_id", "kwargs", "good", "bad"),
    SATISFY_VIOLATE,
    ids=[f"{c[0]}-{c[1]}" for c in SATISFY_VIOLATE],
)
def test_satisfy_and_violate(semantics, instruction_id, kwargs, good, bad):
    assert _check(instruction_id, kwargs, good, semantics) == 1.0
    assert _check(instruction_id, kwargs, bad, semantics) == 0.0


@pytest.mark.parametrize(("instruction_id", "kwargs", "text", "ref", "fixed"), FIXED_CASES, ids=[c[0] for c in FIXED_CASES])
def test_fixed_deviations(instruction_id, kwargs, text, ref, fixed):
    assert _check(instruction_id, kwargs, text, "reference") == float(ref)
    assert _check(instruction_id, kwargs, text, "fixed") == float(fixed)


@pytest.mark.parametrize(
    ("instruction_id", "kwargs", "text", "expected"),
    [
        ("length_constraints:number_words", {"num_words": 3, "relation": "less than"}, "one two three", 0.0),
        ("length_constraints:number_words", {"num_words": 3, "relation": "less than"}, "one two", 1.0),
        ("count:word_count_range", {"min_words": 2, "max_words": 2}, "one two", 1.0),
        ("keywords:letter_frequency", {"letter": "a", "let_frequency": 0, "let_relation": "at least"}, "xyz", 1.0),
        ("count:numbers", {"N": 0.0}, "no digits", 1.0),  # float counts, as the IFBench data stores them
        ("new:copy_span_idx", {"prompt_to_repeat": "abcdef", "n_start": 0, "n_end": 0}, " ", 0.0),
        ("detectable_format:json_format", {}, "```JSON\n[1, 2]\n```", 1.0),
        ("format:emoji", {}, "Done 😀", 1.0),
    ],
)
def test_boundaries(instruction_id, kwargs, text, expected):
    assert _check(instruction_id, kwargs, text) == expected


@pytest.mark.parametrize(
    ("gt", "message"),
    [
        ([{"instruction_id": ["nope:nope"], "kwargs": [None]}], "nope:nope"),
        ([{"instruction_id": ["keywords:frequency"], "kwargs": [{"keyword": "a", "frequency": "x", "relation": "at least"}]}], "keywords:frequency"),
        ([{"instruction_id": ["keywords:frequency"], "kwargs": [{"keyword": "a", "relation": "at least"}]}], "frequency"),
        ([{"instruction_id": ["keywords:frequency"], "kwargs": [{"keyword": "a", "frequency": 1, "relation": "at most"}]}], "keywords:frequency"),
        ([{"instruction_id": ["punctuation:no_comma"], "kwargs": [{"extra": 1}]}], "punctuation:no_comma"),
        ([{"instruction_id": ["keywords:existence"], "kwargs": [{"keywords": [":-("]}]}], "keywords:existence"),
        ({"func_name": "verify_nothing"}, "verify_nothing"),
        ("not a literal [", "ground_truth"),
    ],
)
def test_bad_input_is_invalid_naming_the_id(gt, message):
    task = VERIFIER.make_task("text", gt, {}, None)
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(")):
        VERIFIER.score(task)


def test_regex_keyword_is_literal_in_fixed():
    assert _check("keywords:existence", {"keywords": [":-("]}, "sad :-( face", "fixed") == 1.0


# `fixed` matches IFEval's keywords on word boundaries, and the keyword's plural in -s is the keyword: real outputs
# whose authors' grader (a substring match) counted "SNEAKERS" for "the word sneaker should appear 10 or more times"
# and "schedules" for "mention the keyword 'schedule' more than 5 times" (benchmarks/data/if_real_outputs.jsonl,
# Sys2-CPI rows 39 and 54). Other words that merely contain the keyword still do not count.
PLURAL_KEYWORDS = [
    ("keywords:frequency", {"keyword": "sneaker", "frequency": 3, "relation": "at least"},
     "A SNEAKER BRAND. PRADA'S SNEAKERS. SNEAKER CULTURE.", 1.0),
    ("keywords:frequency", {"keyword": "schedule", "frequency": 3, "relation": "at least"},
     "A shared schedule fits their schedules; the schedule holds.", 1.0),
    ("keywords:existence", {"keywords": ["mom", "mother"]}, "Moms and mothers laugh.", 1.0),
    ("keywords:forbidden_words", {"forbidden_words": ["collaborator"]}, "We thank our collaborators.", 0.0),
    ("keywords:frequency", {"keyword": "photography", "frequency": 1, "relation": "less than"},
     "Photographs, not photography's rules.", 0.0),
    # guards: another word that contains the keyword, a plural other than -s
    ("keywords:frequency", {"keyword": "war", "frequency": 1, "relation": "at least"}, "software awards toward", 0.0),
    ("keywords:existence", {"keywords": ["war"]}, "fine wares", 0.0),
    ("keywords:existence", {"keywords": ["cat"]}, "categories of cats", 1.0),
    ("keywords:existence", {"keywords": ["cat"]}, "categories", 0.0),
    ("keywords:forbidden_words", {"forbidden_words": ["issue"]}, "Tissues and reissued notes.", 1.0),
]


@pytest.mark.parametrize(("instruction_id", "kwargs", "text", "expected"), PLURAL_KEYWORDS,
                         ids=[f"{c[0]}-{c[2][:20]}" for c in PLURAL_KEYWORDS])
def test_fixed_keywords_count_their_plural(instruction_id, kwargs, text, expected):
    assert _check(instruction_id, kwargs, text, "fixed") == expected


def test_ground_truth_encodings():
    python_literal = "[{'instruction_id': ['punctuation:no_comma', 'last_word:last_word_answer'], 'kwargs': [None, {'last_word': 'brief'}]}]"
    as_json = '[{"instruction_id": ["punctuation:no_comma"], "kwargs": [null]}]'
    wrapped = [python_literal]
    assert len(parse_ground_truth(python_literal)) == 2
    assert len(parse_ground_truth(as_json)) == 1
    assert len(parse_ground_truth(wrapped)) == 2
    ifbench_row = {"instruction_id_list": ["count:numbers"], "kwargs": [{"N": 2.0, "keyword1": None}]}
    assert parse_ground_truth(ifbench_row)[0].instruction_id == "count:numbers"
    task = VERIFIER.make_task("Be brief", python_literal, {}, None)
    score = VERIFIER.score(task)
    assert score.reward == 1.0
    assert [c["passed"] for c in score.details["constraints"]] == [True, False] or score.reward == 1.0


def test_fraction_all_and_empty():
    gt = [{"instruction_id": ["punctuation:no_comma", "punctuation:punctuation_dot"], "kwargs": [None, None]}]
    task = VERIFIER.make_task("no comma here.", gt, {}, None)
    score = VERIFIER.score(task)
    assert score.reward == 0.5
    assert score.details["constraints"] == [
        {"instruction_id": "punctuation:no_comma", "passed": True},
        {"instruction_id": "punctuation:punctuation_dot", "passed": False},
    ]
    assert VERIFIER.score(VERIFIER.make_task("no comma here.", gt, {"score": "all"}, None)).reward == 0.0
    assert VERIFIER.score(VERIFIER.make_task("x", [{"instruction_id": [], "kwargs": []}], {}, None)).reward == 0.0


def test_modes():
    gt = [{"instruction_id": ["startend:quotation"], "kwargs": [None]}]
    thinking = '<think>"Let me think"</think><answer>"Final answer"</answer>'
    assert VERIFIER.score(VERIFIER.make_task(thinking, gt, {"mode": "rl"}, None)).reward == 1.0
    assert VERIFIER.score(VERIFIER.make_task(thinking, gt, {"mode": "strict"}, None)).reward == 0.0
    header = 'Sure, here it is:\n"quoted answer"'
    assert VERIFIER.score(VERIFIER.make_task(header, gt, {"mode": "strict"}, None)).reward == 0.0
    assert VERIFIER.score(VERIFIER.make_task(header, gt, {"mode": "loose"}, None)).reward == 1.0
    empty = VERIFIER.make_task("<think>all thinking</think>  ", gt, {"mode": "rl"}, None)
    assert VERIFIER.score(empty).reward == 0.0


def test_tulu3_func_name_format():
    gt = '{"func_name": "validate_lowercase", "N": null, "quantifier": null}'
    assert VERIFIER.score(VERIFIER.make_task("all lower", gt, {}, None)).reward == 1.0
    assert VERIFIER.score(VERIFIER.make_task("Not Lower", gt, {}, None)).reward == 0.0
    bad_args = {"func_name": "verify_paragraph_count", "quantifier": "at least"}
    with pytest.raises(InvalidInput, match="verify_paragraph_count"):
        VERIFIER.score(VERIFIER.make_task("x", bad_args, {}, None))


def test_checker_crash_fails_only_that_constraint():
    gt = [{"instruction_id": ["custom:csv_quotes", "punctuation:no_comma"], "kwargs": [None, None]}]
    header = "\t".join(f'"{w}"' for w in ("StudentID", "Subject", "Grade", "Semester", "Score"))
    text = header + "\n\t\t\t\t" * 3  # empty fields: the reference raises IndexError
    score = VERIFIER.score(VERIFIER.make_task(text, gt, {"mode": "strict"}, None))
    assert score.reward == 0.5
    assert "error" in score.details["constraints"][0]


def test_deterministic_language_detection():
    gt = [{"instruction_id": ["language:response_language"], "kwargs": [{"language": "en"}]}]
    rewards = {VERIFIER.score(VERIFIER.make_task("Hello there my friend", gt, {}, None)).reward for _ in range(20)}
    assert len(rewards) == 1


def test_text_utilities():
    assert split_sentences_regex("Dr. Smith is here. He left!") == ["Dr. Smith is here.", "He left!"]
    assert word_tokenize("I DON'T know.") == ["I", "DO", "N'T", "know", "."]
    assert word_tokenize("Why?! Now.") == ["Why", "?", "!", "Now", "."]


def test_every_id_checks_with_the_network_blocked(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network blocked by test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for instruction_id, kwargs, good, bad in CASES:
        for mode in ("rl", "strict", "loose"):
            for semantics in ("reference",) if instruction_id in REFERENCE_ONLY else ("reference", "fixed"):
                assert _check(instruction_id, kwargs, good, semantics, mode) == 1.0, (instruction_id, mode, semantics)
