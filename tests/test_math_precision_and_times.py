"""Issue 24, two policy gaps found on batch 5's held-out split after its measurement: a precision the prompt asks
for ("to the nearest hundredth": 0.033 is not an answer to it for 0.03), and times of day (`4:30 PM` is
`\\text{4:30 p.m.}`). Each rule is tested from its statement, not only from the corpus row; the cases marked
"old: 1" were accepted before the fix and those marked "old: 0" rejected (all fail on the old code)."""

from __future__ import annotations

import pytest

from olmorl.rewards._models import ChatMessage
from olmorl.rewards.engine._registry import load_verifiers
from olmorl.rewards._settings import Settings

VERIFIERS = load_verifiers()
HUNDREDTH = "What is the probability? Express your answer as a decimal to the nearest hundredth."


def scored(response: str, ground_truth, prompt=None, **options):
    verifier = VERIFIERS["math"](Settings())
    return verifier.score(verifier.make_task(response, ground_truth, options, prompt))


def score(response: str, ground_truth, prompt=None, **options) -> float:
    return scored(response, ground_truth, prompt, **options).reward


def boxed(answer: str) -> str:
    return f"So the answer is $\\boxed{{{answer}}}$."


# -- a precision the prompt asks for ---------------------------------------------------------------------

@pytest.mark.parametrize(("prompt", "reference", "answer"), [
    (HUNDREDTH, "0.03", "0.033"),  # batch 5's row: more places than asked (old: 1)
    (HUNDREDTH, "0.03", "0.034"),
    (HUNDREDTH, "0.03", "\\frac{1}{30}"),  # exact, but not a decimal to the hundredth
    ("Round your answer to the nearest tenth.", "12.3", "12.34"),
    ("Give your answer to 2 decimal places.", "1.41", "1.414"),
    ("Give your answer to two decimal places.", "1.41", "\\sqrt{2}"),
    ("Express the answer to the nearest cent.", "12.35", "\\$12.348"),
    ("Give the answer to 3 significant figures.", "0.0337", "0.03371"),
    ("Give the answer to three significant figures.", "1.23", "1.2345"),
    ("Round to the nearest thousandth.", "0.333", "0.3333"),
    ("What percent is it? Round to the nearest tenth of a percent.", "3.5\\%", "3.54\\%"),
])
def test_an_answer_more_precise_than_the_prompt_asks_is_wrong(prompt, reference, answer):
    assert score(boxed(answer), reference) == 1.0  # without a prompt the rounded-decimal rule stands
    result = scored(boxed(answer), reference, prompt)
    assert result.reward == 0.0
    assert result.details["reason"] == "mismatch" and "requested_decimal_places" in result.details


@pytest.mark.parametrize(("prompt", "reference", "answer"), [
    (HUNDREDTH, "0.03", "0.03"),
    (HUNDREDTH, "0.03", "0.030"),  # trailing zeros write the same value: accepted
    (HUNDREDTH, "0.03", "\\frac{3}{100}"),  # the reference's value exactly
    (HUNDREDTH, "0.03", "3\\%"),
    ("Round your answer to the nearest tenth.", "12.3", "12.3"),
    ("Round to the nearest whole number.", "12", "12.0"),
    ("Give the answer to 3 significant figures.", "0.0337", "0.03370"),
    ("Express the answer to the nearest cent.", "12.35", "\\$12.35"),
    ("What percent is it? Round to the nearest tenth of a percent.", "3.5\\%", "0.035"),
    # the reference written to more places than the phrase names: the phrase is about something else
    ("What is the smallest number that rounds to 3.5 when rounded to the nearest tenth?", "3.45", "3.45"),
    # the reference written to fewer places than asked: an answer at the precision asked that rounds to it
    ("Give your answer to 2 decimal places.", "0.5", "0.50"),
    # two different precisions in one prompt: none is the answer's, today's rule
    ("Round a to the nearest tenth and b to the nearest hundredth. What is b?", "0.03", "0.033"),
])
def test_an_answer_at_the_precision_asked_passes(prompt, reference, answer):
    assert score(boxed(answer), reference, prompt) == 1.0


@pytest.mark.parametrize(("prompt", "reference", "answer"), [
    (HUNDREDTH, "0.03", "0.04"),  # a wrong value at the right precision stays wrong
    (HUNDREDTH, "0.03", "0.3"),
    ("Round to the nearest tenth.", "12.3", "12.4"),
    ("Round to the nearest whole number.", "12", "12.4"),
])
def test_a_wrong_value_at_the_requested_precision_stays_wrong(prompt, reference, answer):
    assert score(boxed(answer), reference, prompt) == 0.0


def test_a_percent_answer_for_a_probability_is_held_to_the_precision_too():
    assert score(boxed("3.3\\%"), "0.03", "What is the probability?") == 1.0  # the percent rule, no precision
    assert score(boxed("3.3\\%"), "0.03", HUNDREDTH) == 0.0
    assert score(boxed("3\\%"), "0.03", HUNDREDTH) == 1.0


def test_a_colon_between_digits_is_no_label_in_an_answer_sentence():
    # "05 in the evening" was read as the value after a colon, so 7:05 p.m. passed for 5:05 p.m.
    assert score("<answer>7:05 in the evening</answer>", "\\text{5:05 p.m.}") == 0.0
    assert score("<answer>The train arrives at 7:05 p.m.</answer>", "\\text{5:05 p.m.}") == 0.0
    assert score("<answer>The ratio of boys to girls is 3:4.</answer>", "3:4") == 1.0


def test_a_chat_prompt_is_read_too():
    prompt = [ChatMessage(role="system", content="You are a careful solver."),
              ChatMessage(role="user", content="Find x. Express your answer to the nearest hundredth.")]
    assert score(boxed("0.033"), "0.03", prompt) == 0.0
    assert score(boxed("0.03"), "0.03", prompt) == 1.0


def test_batch_5_heldout_row_is_a_reject_with_its_prompt():
    """The held-out row (read after its measurement): `0.033` for 0.03, "to the nearest hundredth"."""
    prompt = ("Each of the three letters ... What is the probability ...? Express your answer as a decimal to "
              "the nearest hundredth.")
    response = "the probability is \\(0.323 \\times 0.323 \\times 0.323\\). </think> <answer> 0.033 </answer>"
    assert score(response, "0.03") == 1.0  # no prompt: the rounded-decimal rule
    assert score(response, "0.03", prompt) == 0.0


# -- times of day ----------------------------------------------------------------------------------------

TIME = "\\text{4:30 p.m.}"


@pytest.mark.parametrize("answer", [
    "<answer>4:30 PM</answer>",  # batch 5's row (old: 0)
    "<answer>4:30pm</answer>",
    "<answer>4:30 P.M.</answer>",
    "<answer>4:30 p.m</answer>",
    "The answer is $\\boxed{4:30 \\text{ PM}}$.",
    "The answer is $\\boxed{\\text{4:30 in the afternoon}}$.",
    "<answer>4:30:00 PM</answer>",
    "<answer>16:30</answer>",  # a 24-hour time whose hour cannot be a 12-hour one
])
def test_the_same_time_of_day_written_another_way(answer):
    assert score(answer, TIME) == 1.0


@pytest.mark.parametrize(("answer", "reference"), [
    ("<answer>12:00 AM</answer>", "00:00"),  # midnight
    ("<answer>12:15 a.m.</answer>", "\\text{0:15}"),
    ("<answer>12:30 p.m.</answer>", "\\text{12:30 PM}"),  # noon
    ("<answer>9 a.m.</answer>", "\\text{9:00 a.m.}"),
    ("<answer>7:05 in the evening</answer>", "19:05"),
])
def test_midnight_noon_and_hours_alone(answer, reference):
    assert score(answer, reference) == 1.0


@pytest.mark.parametrize("answer", [
    "<answer>4:30 AM</answer>",  # the other half of the day
    "<answer>4:30 in the morning</answer>",
    "<answer>5:30 PM</answer>",
    "<answer>4:35 PM</answer>",
    "<answer>4 PM</answer>",
    "<answer>4:30</answer>",  # says neither a.m. nor p.m.
    "<answer>04:30</answer>",
    "<answer>16:45</answer>",
    "<answer>4:30 PM or 5 PM</answer>",  # a hedge stays a hedge
    "<answer>8:15</answer>",  # 16:30 as a ratio is 8:15; a time is no ratio
])
def test_a_different_or_unstated_time_is_never_accepted(answer):
    assert score(answer, TIME) == 0.0


def test_a_time_never_matches_a_ratio_or_a_number():
    assert score("<answer>4:30 PM</answer>", "2:15") == 0.0
    assert score("<answer>4:30 PM</answer>", "16.5") == 0.0
    assert score("<answer>2:15</answer>", "4:30") == 1.0  # bare ratios keep comparing as ratios
