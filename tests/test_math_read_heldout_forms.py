"""Answer forms of held-out false rejects of batches 25-36 (benchmarks/data/real_outputs.jsonl), read on 2026-11-27
after each split's never-tuned number was recorded (docs/fidelity.md, "Held-out misses read after their numbers were
recorded"). The cases are written from the forms, not copied from the rows. Each 1.0 case scored 0 before its fix;
the 0.0 cases are guards."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())


def score(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


SPEED = "A bicycle travels 20 feet per minute. What is its speed expressed in inches per second?"
TRUCKS = ("Each crate weighs 75 pounds and a truck carries 2000 pounds. How many trucks are needed to carry 80 "
          "crates in one trip?")
PROGRAM = "```python\nprint(75 * 80 / 2000)\n```\n"


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        # A rate's unit written with a slash after the value (`in/s`, `inches/second`) is a unit, as `m/s` and
        # "inches per second" were.
        ("**FORMAT:**\n\n\\boxed{4 \\text{ in/s}}", "4", SPEED, 1.0),
        ("**FORMAT:**\n\n\\boxed{4 \\text{ inches/second}}", "4", SPEED, 1.0),
        ("So the speed is $4 \\text{ ft/min}$.", "4", SPEED, 1.0),
        ("\\boxed{4 \\text{ in/s}}", "240", SPEED, 0.0),
        ("\\boxed{4 \\text{ in}/2}", "4", SPEED, 0.0),  # a slash before a number divides
        ("\\boxed{3 m/2}", "3", None, 0.0),
        # An equation chain whose numbers group their thousands with commas gives its last side, as one without.
        ("Therefore, the answer (arabic numerals) is: 76,000 + 53,200 = 129,200.", "129200", None, 1.0),
        ("The answer is $1,250 \\times 4 = 5,000$.", "5000", None, 1.0),
        ("Therefore, the answer (arabic numerals) is: 76,000 + 53,200 = 129,200.", "76000", None, 0.0),
        ("Therefore, the answer (arabic numerals) is: 76,000 + 53,200 = 129,300.", "129200", None, 0.0),
        ("The answer is 1,20 + 3 = 4,5.", "45", None, 0.0),  # not thousands: a list
        # After a program's output, a closing that opens with the count the program printed, in words or digits,
        # with givens after it.
        (PROGRAM + "```output\n3.0\n```\nThree trucks will be needed to carry 80 crates in one trip.", "3", TRUCKS, 1.0),
        (PROGRAM + "```output\n3\n```\n3 trucks are needed to carry 80 crates in one trip.", "3", TRUCKS, 1.0),
        (PROGRAM + "```output\n3.0\n```\nThree trucks will be needed to carry 80 crates in one trip.", "80", TRUCKS, 0.0),
        (PROGRAM + "```output\n4.0\n```\nThree trucks will be needed to carry 80 crates in one trip.", "3", TRUCKS, 0.0),
        (PROGRAM + "```output\n2.5\n```\nThree trucks will be needed to carry 80 crates in one trip.", "3", TRUCKS, 0.0),
        # The count that opens the closing disagrees with the output: no answer, not the given after it.
        (PROGRAM + "```output\n4.0\n```\nThree trucks will be needed to carry 80 crates in one trip.", "80", TRUCKS, 0.0),
        (PROGRAM + "```output\n4\n```\n3 trucks are needed to carry 80 crates in one trip.", "80", TRUCKS, 0.0),
        (PROGRAM + "```output\n3.0\n```\nThree trucks will not be enough for 80 crates.", "3", TRUCKS, 0.0),
        (PROGRAM + "```output\n3.0\n```\nThree trucks or 4 trucks carry 80 crates.", "3", TRUCKS, 0.0),
        (PROGRAM + "```output\n3.0\n```\nThree trucks will be needed to carry 80 crates in one", "3", TRUCKS, 0.0),
        ("Three trucks will be needed to carry 80 crates in one trip.", "3", TRUCKS, 0.0),  # no program output
    ],
)
def test_read_heldout_forms(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward
