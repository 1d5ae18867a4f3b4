"""The real-outputs corpus (benchmarks/data/real_outputs.jsonl: model outputs from public releases, graded by
their authors) and the final-answer forms its dev split showed the math verifier missing. Each form case below
scored 0 before the fix (the guards after it must keep scoring 0). Only the `dev` split is tested here: the
`heldout` split is measured by benchmarks/math_fidelity.py, never tuned on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

CORPUS = Path(__file__).parents[1] / "benchmarks" / "data" / "real_outputs.jsonl"
VERIFIER = load_verifiers()["math"](Settings())


def score(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


# A dev row of batch 3 (damek/assignment5-alignment): its answer tag holds an arithmetic sentence with currency.
WAGES = "x </think> <answer> 40 hours x $10 / hour + 5 hours x 1.2 x $10/hour = $460. </answer>"

# A dev row of batch 8 (labrem/neus2026-labre, gemma2-2b): a listed solution, then an offer to help further.
LISTED = ("**5. FORMAT:**\n\nThe solutions are:  \n* **x = 5** \n\n\n\n"
          "Let me know if you'd like to explore other mathematical problems!")

# A dev row of batch 14 (Phi-3-mini, lm-eval gsm8k), shortened: currency amounts, then a named closing sentence.
CURRENCY_LINES = ("Every second glass costs $5 * 0.6 = $3\nThe cost for the discounted glasses is 8 * $3 = $24\n"
                  "The total cost for all 16 glasses is $40 + $24 = $64\nKylar needs to pay $64 for the 16 glasses.")

POLAR = "\\left( 3, \\frac{\\pi}{2} \\right)"  # MATH500's reference for (0, 3) in polar coordinates

# (form, response, reference, reward): each form's 1.0 cases scored 0 before the fix; the 0.0 cases are guards
# (the "disowned value" guards were accepted before their fix).
CASES = [
    # the answer phrase ends its line; the value stands alone on the response's last line
    ("next line", "So it is heads up.\nTherefore, the answer (Yes or No) is:\n\nYes", "yes", 1.0),
    ("next line", "Therefore, the answer (Yes or No) is:\n\nYes, Hulk's alter ego can explain atomic events.", "yes",
     1.0),
    ("next line", "Therefore, the answer is:\n\n42", "42", 1.0),
    ("next line", "Therefore, the answer (Yes or No) is:\n\nYes", "no", 0.0),
    ("next line", "The answer is:\n\n42\n\nWait, that is wrong, let me redo it.", "42", 0.0),  # not the last line
    # a response that is only a value and its unit; not a comment on the value, a bound or a hedge
    ("lone value", "2 shelves.", "2", 1.0),
    ("lone value", " 6 cupcakes.", "6", 1.0),
    ("lone value", "2 days", "2", 1.0),
    ("lone value", "6 cupcakes.", "3", 0.0),
    ("lone value", "5 is wrong.", "5", 0.0),
    ("lone value", "7 or more", "7", 0.0),
    ("lone value", "maybe 5 apples", "5", 0.0),
    # a closing sentence with a named subject; not a pronoun (the closing-sentence contract), a denial, a
    # condition or a second number
    ("named subject", "Janet eats 3 and bakes with 4.\nJanet has 18 apples left.", "18", 1.0),
    ("named subject", "251 - 197 = 54 points. \nJojo scored 54 points.", "54", 1.0),
    ("named subject", "Tim will need 48 lemons.", "48", 1.0),
    ("named subject", "She earns 18 dollars a day.", "18", 0.0),
    ("named subject", "Janet does not have 18 apples.", "18", 0.0),
    ("named subject", "If Janet has 18 apples.", "18", 0.0),
    ("named subject", "Janet has 18 apples and 3 pears.", "18", 0.0),
    # batch 36 (a MultiArith dev row): a name with a companion named through it ("and his friend") is a named
    # subject; not with a wrong value, a denial, a condition, a second number or a hedge
    ("named subject", "18 + 36 = 54. \nEdward and his friend spent 54 dollars in total.", "54", 1.0),
    ("named subject", "Megan and her sister picked 41 carrots.", "41", 1.0),
    ("named subject", "Edward and his friend spent 54 dollars in total.", "18", 0.0),
    ("named subject", "Edward and his friend did not spend 54 dollars.", "54", 0.0),
    ("named subject", "If Edward and his friend spent 54 dollars.", "54", 0.0),
    ("named subject", "Edward and his friend spent 54 dollars and 3 cents.", "54", 0.0),
    ("named subject", "Edward and his friend spent maybe 54 dollars.", "54", 0.0),
    # batch 40 (a GPT-4 city-equation dev row): a word of approximation after "The answer is" states the value that
    # follows, as `\\approx` does; not "almost"/"nearly"/"at least", another value, a hedge or an inexact value
    ("approximate answer", "48.982322\n\nThe answer is approximately 49.", "49", 1.0),
    ("approximate answer", "The answer is about $49.", "49", 1.0),
    ("approximate answer", "So, the answer is roughly -1.", "-1", 1.0),
    ("approximate answer", "The answer is approximately -1.", "1", 0.0),
    ("approximate answer", "The answer is almost 49.", "49", 0.0),
    ("approximate answer", "The answer is nearly 49.", "49", 0.0),
    ("approximate answer", "The answer is at least 49.", "49", 0.0),
    ("approximate answer", "The answer is approximately 49 or 50.", "49", 0.0),
    ("approximate answer", "Maybe the answer is approximately 49.", "49", 0.0),
    ("approximate answer", "The answer is approximately 3.14.", "\\pi", 0.0),
    ("approximate answer", "The answer is approximately 0.33.", "\\frac{1}{3}", 0.0),
    # `7!!` is the double factorial, not (7!)! nor 7!
    ("double factorial", "The answer is $\\boxed{7!!}$.", "105", 1.0),
    ("double factorial", "The answer is $\\boxed{8!!}$.", "384", 1.0),
    ("double factorial", "The answer is $\\boxed{105}$.", "7!!", 1.0),
    ("double factorial", "The answer is $\\boxed{7!!}$.", "5040", 0.0),
    ("double factorial", "The answer is $\\boxed{5040}$.", "7!!", 0.0),
    # batch 2: a choice letter followed by the option's text after a comma; not a second choice
    ("letter, option text", 'Among A through E, the answer is B, "melted."', "B", 1.0),
    ("letter, option text", "Among A through E, the answer is C, stagger.", "C", 1.0),
    ("letter, option text", "Among A through F, the answer is A, 08/10/1997.", "A", 1.0),
    ("letter, option text", "Among A through E, the answer is B, melted.", "C", 0.0),
    ("letter, option text", "The answer is A, B.", "A", 0.0),
    ("letter, option text", "The answer is A, C, D.", "A", 0.0),
    ("letter, option text", "The answer is A, B and C.", "A", 0.0),
    ("letter, option text", "The answer is A, (C).", "A", 0.0),
    ("letter, option text", "The answer is (E) A restaurant.", "E", 1.0),
    # batch 27: a double hyphen between the letter and the option's text, as a comma
    ("letter, option text", "Among A through E, the answer is D--disturb.", "D", 1.0),
    ("letter, option text", "Among A through E, the answer is D--disturb.", "C", 0.0),
    ("letter, option text", "The answer is A--B.", "A", 0.0),
    ("letter, option text", "The answer is A-1.", "A", 0.0),
    # batch 2: the choice named as the most likely one; "probably" stays a hedge
    ("most likely choice", "Among A through E, the answer is most likely B, homes.", "B", 1.0),
    ("most likely choice", "Among A through E, the answer is most likely E, a restaurant.", "E", 1.0),
    ("most likely choice", "Among A through E, the answer is most likely B, homes.", "A", 0.0),
    ("most likely choice", "The answer is probably B.", "B", 0.0),
    # batch 2: a value and a hyphenated unit alone on the last line after "is:"
    ("hyphenated unit", "So the total is 0.7 light-years. \nTherefore, the answer (arabic numerals) is:\n\n0.7 light-years",
     "0.7", 1.0),
    ("hyphenated unit", "The answer is 3 man-hours.", "3", 1.0),
    ("hyphenated unit", "The answer is 0.7 light-years.", "0.8", 0.0),
    ("hyphenated unit", "The answer is 5-6.", "5", 0.0),
    # batch 2: two decimals written to a float's full precision that differ in the last place are one value
    ("float digits", "Therefore, the answer (arabic numerals) is 0.6666666666666667.", "0.6666666666666666", 1.0),
    ("float digits", "The answer is 4.333333333333333.", "4.333333333333334", 1.0),
    ("float digits", "The answer is 0.6666666666666667.", "0.6666666666666566", 0.0),
    # batch 32: the answer in digits, then the same number in words; not other words, nor words alone
    ("restated in words", "The answer (arabic numerals) is 99. \n\nThe answer (words) is ninety-nine.", "99", 1.0),
    ("restated in words", "The answer is 99. The answer (words) is ninety-eight.", "99", 0.0),
    ("restated in words", "The answer is 98. The answer (words) is ninety-nine.", "99", 0.0),
    ("restated in words", "Therefore, the answer (arabic numerals) is eleven.", "11", 0.0),
    ("restated in words", "The answer is 12 or 13. The answer (words) is twelve.", "12", 0.0),
    # batch 37: the answer in digits, then the same fraction as a cardinal and an ordinal; not another fraction, an
    # ordinal of the wrong number, "a half", a hedge, nor words alone
    ("restated in words", "Therefore, the answer (arabic numerals) is 3/10. \nThe answer (in words) is three-tenths.",
     "0.3", 1.0),
    *(("restated in words", f"The answer is {digits}. The answer (words) is {words}.", reference, reward)
      for digits, words, reference, reward in [
          ("1/2", "one half", "0.5", 1.0), ("2/3", "two-thirds", "2/3", 1.0), ("3/10", "three-fifths", "0.3", 0.0),
          ("3/10", "three tenth", "0.3", 0.0), ("1/2", "a half", "0.5", 0.0),
          ("3/10 or 1/2", "three-tenths", "0.3", 0.0)]),
    ("restated in words", "Therefore, the answer (arabic numerals) is three-tenths.", "0.3", 0.0),
    ("float digits", "The answer is 0.66666666666667.", "0.6666666666666666", 0.0),
    ("float digits", "The answer is 1234567890123451.", "1234567890123452", 0.0),  # integers stay exact
    # batch 3: an answer tag holding a sentence holds its value, as a box or "Final Answer:" does; dollar signs
    # around prose are currency, not math
    ("answer tag sentence", WAGES, "460", 1.0),
    ("answer tag sentence", "x </think> <answer> So she scored $5$ points. </answer>", "5", 1.0),
    ("answer tag sentence", WAGES, "10", 0.0),
    ("answer tag sentence", "x </think> <answer> The cost is $5 per hour and the total is $60. </answer>", "5", 0.0),
    ("answer tag sentence", "x </think> <answer> It is 5 or 6. </answer>", "5", 0.0),
    ("answer tag sentence", "x </think> <answer> I think it is probably 5. </answer>", "5", 0.0),
    # batch 3: an answer phrase inside an answer tag is read within the tag
    ("phrase in answer tag", "x </think> <answer> The answer is 10 </answer>", "10", 1.0),
    ("phrase in answer tag", "x </think> <answer> Maybe the answer is 5. </answer>", "5", 0.0),
    ("phrase in answer tag", "x </think> <answer> The answer is not 5. </answer>", "5", 0.0),
    # batch 3: a value its own statement disowns or takes back never counts (these were accepted before)
    ("disowned value", "Reflection of a person </think> <answer> 135 // definitely not correct </answer>", "135", 0.0),
    ("disowned value", "The answer is 135, definitely not correct.", "135", 0.0),
    ("disowned value", "The answer is 7, not correct.", "7", 0.0),
    ("disowned value", "The answer is 5, wait, that is wrong.", "5", 0.0),
    ("disowned value", "Final Answer: The total is 5, wait, no, that is wrong.", "5", 0.0),
    ("disowned value", "The answer is 5, but I made a mistake somewhere.", "5", 0.0),
    ("disowned value", "x </think> <answer> The total is 5, wait, that is wrong. </answer>", "5", 0.0),
    ("disowned value", "The answer is C, wrong.", "C", 1.0),  # a choice's text may be the word "wrong"
    ("disowned value", "x </think> <answer> 5 is wrong, the total is 6. </answer>", "6", 1.0),
    # batch 4: an opening answer tag written twice opens one answer; a value between two openings is not it
    ("repeated answer tag", "x </think> <answer> <answer> 3/8 </answer>", "\\frac{3}{8}", 1.0),
    ("repeated answer tag", "x </think> <answer><answer>$45^\\circ$</answer>", "45^\\circ", 1.0),
    ("repeated answer tag", "x </think> <answer> <answer> 3/8 </answer>", "\\frac{1}{4}", 0.0),
    ("repeated answer tag", "x </think> <answer> 5 <answer> 6 </answer>", "6", 0.0),
    ("repeated answer tag", "x </think> <answer> 5 <answer> 6 </answer>", "5", 0.0),
    ("repeated answer tag", "x </think> <answer> <answer> maybe 3/8 </answer>", "\\frac{3}{8}", 0.0),
    ("repeated answer tag", "x </think> <answer> <answer> 3/8 or 1/2 </answer>", "\\frac{3}{8}", 0.0),
    # batch 5: an opening tag with a wrong or missing bracket still opens the answer its closing tag ends; not
    # where a well-formed tag follows, nor without a closing tag, nor around a hedge
    ("mangled answer tag", "50\u00f75=10. </think> @answer 10 </answer>", "10", 1.0),
    ("mangled answer tag", "x </think> <answer 10 </answer>", "10", 1.0),
    ("mangled answer tag", "x </think> answer> $\\frac{4}{11}$ </answer>", "\\frac{4}{11}", 1.0),
    ("mangled answer tag", "x </think> @answer 10 </answer>", "12", 0.0),
    ("mangled answer tag", "x </think> answer> 5 <answer> 6 </answer>", "5", 0.0),
    ("mangled answer tag", "x </think> The answer> is 5", "5", 0.0),
    ("mangled answer tag", 'x </think> <answer content="1"></answer>', "1", 0.0),  # a batch 3 dev row
    ("mangled answer tag", "x </think> @answer 10 or 12 </answer>", "10", 0.0),
    ("mangled answer tag", "x </think> @answer maybe 10 </answer>", "10", 0.0),
    # batch 7: a choice restated in parentheses (full-width in Chinese) is that choice; not with another choice or
    # "or" inside, not a different letter, not a hedge
    ("choice restated in parentheses", "\\[\n\\boxed{\\text{B\uff08}a=1\\text{\uff09}}\n\\]", "B", 1.0),  # a dev row
    ("choice restated in parentheses", "\\boxed{B (a = 1)}", "B", 1.0),
    ("choice restated in parentheses", "The answer is D(y=13x-8).", "D", 1.0),
    ("choice restated in parentheses", "\\boxed{B\uff08a=1\uff09}", "C", 0.0),
    ("choice restated in parentheses", "\\boxed{B (or C)}", "B", 0.0),
    ("choice restated in parentheses", "\\boxed{B (not C)}", "B", 0.0),
    ("choice restated in parentheses", "\\boxed{B (a=1) (C)}", "B", 0.0),
    ("choice restated in parentheses", "maybe \\boxed{B (a=1)}", "B", 0.0),
    # batch 8: a closing sentence in Markdown emphasis states its value as the rendered text does (two dev rows of
    # gemma2); not a second value, a denial, a hedge, more reasoning or a sentence with no full stop
    ("emphasized closing", "Finally,  *a + b + c = 7 + (-2) + 0 = **5***.", "5", 1.0),  # a dev row
    ("emphasized closing", "The number of different battalions that can be formed is **5 * 45 = 225**.", "225", 1.0),
    ("emphasized closing", "The number of different battalions that can be formed is **225**.", "225", 1.0),
    ("emphasized closing", "Finally,  *a + b + c = 7 + (-2) + 0 = **5***.", "7", 0.0),
    ("emphasized closing", "The number of different battalions that can be formed is **5 * 45 = 225**.", "45", 0.0),
    ("emphasized closing", "Therefore, the total is **not 225**.", "225", 0.0),
    ("emphasized closing", "Therefore, the total is **maybe 12**.", "12", 0.0),
    ("emphasized closing", "We get **12** apples and then add more.", "12", 0.0),
    ("emphasized closing", "The number of battalions is **225**", "225", 0.0),
    # batch 8: a trigonometric ratio of a named angle labels a value as a variable does (a gemma2-9b dev row); not
    # a ratio of another angle, an expression of the ratio, or a different value
    ("trigonometric label", "Therefore, $\\boxed{\\tan A = 2}$.", "2", 1.0),  # a dev row
    ("trigonometric label", "Therefore, $\\boxed{\\tan A = 2}$.", "3", 0.0),
    ("trigonometric label", "Therefore, $\\boxed{\\tan 2A = 2}$.", "2", 0.0),
    ("trigonometric label", "Therefore, $\\boxed{\\tan A + 1 = 3}$.", "3", 0.0),
    ("trigonometric label", "Therefore, $\\boxed{\\sin x = \\frac{1}{2}}$.", "\\frac{\\pi}{6}", 0.0),
    # batch 8: "The solutions are:" and one listed item close the response (a gemma2-2b dev row), before an offer on
    # its own last line; not two items, another value, a hedge, a list under no statement, an offer that asks
    ("listed value, offer", LISTED, "x=5", 1.0),  # a dev row
    ("listed value, offer", "The solutions are:  \n* **x = 5**", "x=5", 1.0),
    ("listed value, offer", "The total is 5.\n\nLet me know if you'd like to explore other problems!", "5", 1.0),
    ("listed value, offer", LISTED, "x=1", 0.0),
    ("listed value, offer", "The solutions are:  \n* **x = 5**\n* **x = 1**", "x=5", 0.0),
    ("listed value, offer", "The solutions are:\n* maybe x = 5", "x=5", 0.0),
    ("listed value, offer", "We tried:\n* x = 5", "x=5", 0.0),
    ("listed value, offer", "Let me know if you'd like me to compute 5.", "5", 0.0),
    # batch 9 (gemma2-2b): a statement ending in a tuple written in plain text; not two tuples, a denial, a hedge,
    # an alternative, a sentence cut off or going on, more reasoning after it, a wrong value
    ("plain tuple", "**5. FORMAT:**\n\nThe polar coordinates are **(3, π/2)**.", POLAR, 1.0),
    ("plain tuple", "The polar coordinates are (3, π/2).", POLAR, 1.0),
    ("plain tuple", "The vertex of the parabola is (2, -6).", "(2,-6)", 1.0),
    ("plain tuple", "The points are (2, -6) and (-4, 3).", "(2,-6)", 0.0),
    ("plain tuple", "The polar coordinates are not (3, π/2).", POLAR, 0.0),
    ("plain tuple", "The polar coordinates are (3, π/2) or (3, 5π/2).", POLAR, 0.0),
    ("plain tuple", "The polar coordinates are (3, π/2)", POLAR, 0.0),
    ("plain tuple", "The polar coordinates are (3, π).", POLAR, 0.0),
    ("plain tuple", "Maybe the polar coordinates are (3, π/2).", POLAR, 0.0),
    ("plain tuple", "The polar coordinates are (3, π/2). Now we convert them back to check.", POLAR, 0.0),
    ("plain tuple", "The polar coordinates are (3, π/2) when x is positive.", POLAR, 0.0),
    # batch 9 (gemma2-2b): an "Answer:" sentence with several numbers, one of them in Markdown bold; not another
    # value, nothing in bold, two in bold, an alternative, a denial
    ("bold value", "**Answer:** 196 has **9** positive whole-number divisors.", "9", 1.0),
    ("bold value", "Answer: 196 has **9** positive divisors.", "9", 1.0),
    ("bold value", "**Answer:** 196 has **9** positive whole-number divisors.", "196", 0.0),
    ("bold value", "**Answer:** 196 has 9 positive whole-number divisors.", "9", 0.0),
    ("bold value", "**Answer:** **196** has **9** positive divisors.", "9", 0.0),
    ("bold value", "**Answer:** 196 has **9** or 10 positive divisors.", "9", 0.0),
    ("bold value", "**Answer:** 196 does not have **9** positive divisors but 8.", "9", 0.0),
    # batch 14 (Phi-3-mini, lm-eval gsm8k): GSM8K's calculator annotation before the value it computes; not the
    # annotation's value where the text states another, nor an annotation alone
    ("calculator annotation", "So, in total, it takes 2 bolts of blue fiber + 1 bolt of white fiber = <<2+1=3>>3 "
     "bolts of fiber.", "3", 1.0),
    ("calculator annotation", "The answer is <<2+1=3>>3.", "3", 1.0),
    ("calculator annotation", "So the total is <<2+1=3>>4 bolts.", "3", 0.0),
    ("calculator annotation", "So the total is <<2+1=3>>.", "3", 0.0),
    # batch 14: "Together," opens a conclusion as "Altogether," does; not "together with" (a given joined to
    # another), a second value offered, or a chain's other side
    ("together", "Together, Toulouse, Charleston, and Seattle have 160 + 80 + 20 = <<160+80+20=260>>260 sheep.", "260",
     1.0),
    ("together", "Together, they have 160 + 80 + 20 = 260 sheep.", "260", 1.0),
    ("together", "Together, they have 160 + 80 + 20 = 260 sheep.", "160", 0.0),
    ("together", "Together, they have 260 or 270 sheep.", "260", 0.0),
    ("together", "Together with the 3 cats, they have 260 sheep.", "260", 0.0),
    # batch 14: a named subject and "to" and a second verb ("needs to pay"), its other numbers restated givens;
    # not another value left beside it, a denial, a distributive given, or the restated given itself
    ("named subject, restated given", "Kylar needs to pay $64 for the 16 glasses.", "64", 1.0),
    ("named subject, restated given", "Tim has to sell 28 tickets on all 3 days.", "28", 1.0),
    ("named subject, restated given", "Kylar needs to pay $64 for the 16 glasses.", "16", 0.0),
    ("named subject, restated given", "Kylar needs to pay $64 for 16 glasses.", "64", 0.0),
    ("named subject, restated given", "Kylar does not need to pay $64 for the 16 glasses.", "64", 0.0),
    ("named subject, restated given", "Kylar needs to pay $64 for each of the 16 glasses.", "64", 0.0),
    # batch 14: currency amounts on earlier lines (`= $3`, `$40 + $24 = $64`) pair into no math span that would
    # swallow the closing sentence's own dollar sign; inline math still closes before a non-digit
    ("currency lines", CURRENCY_LINES, "64", 1.0),
    ("currency lines", CURRENCY_LINES, "40", 0.0),
    ("currency lines", "Every second glass costs $5 * 0.6 = $3\nThus the value is $21$.", "21", 1.0),
    # batch 14 (gpt-4o-mini traces): a closing sentence's value followed by words that only qualify it; not a
    # comparison, a condition, a contrast, or a sentence left unfinished
    ("qualifying tail", "Thus, Ingrid was **165 minutes late** to the party.", "165", 1.0),
    ("qualifying tail", "Therefore, Theo and Tia spent a total of **$60** on the entire contents of their picnic basket.",
     "60", 1.0),
    ("qualifying tail", "Thus, Ingrid was 165 minutes later than Paul.", "165", 0.0),
    ("qualifying tail", "Thus, Ingrid was 165 minutes late if the party started at 8.", "165", 0.0),
    ("qualifying tail", "So Ingrid was 165 minutes late, but Paul was on time.", "165", 0.0),
    ("qualifying tail", "Thus, Ingrid was 165 minutes late to the party", "165", 0.0),
]


@pytest.mark.parametrize(("form", "response", "reference", "reward"), CASES)
def test_final_answer_forms_from_the_dev_split(form, response, reference, reward):
    assert score(response, reference) == reward, form


# batch 7 (deepseek-v4-flash on the gaokao paper, two held-out false rejects read after their numbers were
# recorded): a multiple-choice question answered in a box by the content of the reference's option. Not another
# option's content, a value no option holds, a value two options hold, nor any content without the prompt's options.
MEDIAN = "1. 样本数据6,8,4,5,12的中位数为（ ）\nA. 5\nB. 6\nC. 8\nD. 9\n\n请将答案放在 \\boxed{} 中。"
FOCI = "5. 距离为（ ）\nA. 12\nB. 4\\sqrt{5}\nC. 6\nD. \\frac{\\sqrt{65}}{2}\n"
TWINS = "Which is 6? (  )\nA. 6\nB. 12/2\nC. 8\n"


OPTION_CONTENT = [
    ("中位数是中间第 3 个数，即 6。\n\n\\[\n\\boxed{6}\n\\]", "B", MEDIAN, 1.0),
    ("\\[\n\\boxed{\\frac{\\sqrt{65}}{2}}\n\\]\n\n答案选 D。", "D", FOCI, 1.0),
    ("$\\boxed{\\frac{\\sqrt{65}}{2}}$", "D", FOCI.replace("\n", "\n\n"), 1.0),
    ("$\\boxed{B}$", "B", MEDIAN, 1.0),
    ("$\\boxed{5}$", "B", MEDIAN, 0.0),
    ("$\\boxed{7}$", "B", MEDIAN, 0.0),
    ("$\\boxed{6}$", "B", None, 0.0),
    ("$\\boxed{6}$", "A", TWINS, 0.0),
    ("$\\boxed{6}$", "B", "A. 5\nC. 6\nB. 9\n", 0.0),
    ("$\\boxed{6}$", "B", "Pick one: 5, 6 or 9.", 0.0),
]


# batch 9 (gemma2-2b, a held-out false reject read after its number was recorded): an answer sentence that states
# the value and the form it simplifies to; the form is the value stated. Not after a denial, nor a wrong form.
REWRITTEN_AS = [
    ("* The answer is √117, which can be simplified to 3√13.\n\n**5. FORMAT:**", "3\\sqrt{13}", None, 1.0),
    ("The answer is 117 halves, which can be written as $58.5$.", "58.5", None, 1.0),
    ("The answer is √117, which cannot be simplified to 3√13.", "3\\sqrt{13}", None, 0.0),
    ("The answer is √117, which can be simplified to 3√12.", "3\\sqrt{13}", None, 0.0),
]


# Forms the question decides. Batch 9 (gemma2-9b): "Which student ...?" answered by a closing sentence in the
# question's own words. Not without the question, another name, another predicate, a contrast, a denial, an
# alternative, a hedge, no full stop, more reasoning after it.
WHICH = ("Problem: The results of a cross-country team's training run are graphed below. Which student has the "
         "greatest average speed? [asy]\ndot((1.25, 4.5));\n[/asy]")
EVELYN = "\\text{Evelyn}"
# batch 11 (gemma2-9b, a dev row): "Simplify $\\sqrt{242}$" answered with a decimal left under the radical sign,
# equal in value to 11\\sqrt2 but not simplified (accepted before). Still accepted: the simplified form, any form
# of the value without a "Simplify" question, and a decimal radicand the reference itself keeps.
SIMPLIFY = "Problem: Simplify $\\sqrt{242}$."
ROOT = "11\\sqrt2"
SIMPLEST = "Write $\\sqrt{12.25}$ in simplest form."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        ("**5. FORMAT:**\n\n\nEvelyn has the greatest average speed at approximately **3.6 miles per hour**.", EVELYN,
         WHICH, 1.0),
        ("Evelyn has the greatest average speed.", "Evelyn", WHICH, 1.0),
        ("Ann ran the farthest.", "Ann", "Who ran the farthest?", 1.0),
        ("Evelyn has the greatest average speed.", EVELYN, None, 0.0),
        ("Carla has the greatest average speed.", EVELYN, WHICH, 0.0),
        ("Evelyn has the greatest distance.", EVELYN, WHICH, 0.0),
        ("Evelyn has the greatest average speed but Carla runs farther.", EVELYN, WHICH, 0.0),
        ("Evelyn has the greatest average speed, not Carla.", EVELYN, WHICH, 0.0),
        ("Evelyn or Carla has the greatest average speed.", EVELYN, WHICH, 0.0),
        ("Maybe Evelyn has the greatest average speed.", EVELYN, WHICH, 0.0),
        ("Evelyn has the greatest average speed", EVELYN, WHICH, 0.0),
        ("Evelyn has the greatest average speed. Let us check Carla next, her speed is", EVELYN, WHICH, 0.0),
        ("**5. FORMAT:**\n\n$\\boxed{2\\sqrt{60.5}}$", ROOT, SIMPLIFY, 0.0),
        ("The simplest form is $\\boxed{\\sqrt{12.25}}$.", "3.5", SIMPLEST, 0.0),
        ("$\\boxed{\\sqrt[3]{0.5} \\cdot 2}$", "\\sqrt[3]{4}", "Simplify $\\sqrt[3]{4}$.", 0.0),
        ("$\\boxed{11\\sqrt{2}}$", ROOT, SIMPLIFY, 1.0),
        ("$\\boxed{2\\sqrt{60.5}}$", ROOT, None, 1.0),
        ("$\\boxed{2\\sqrt{60.5}}$", ROOT, "What is the length of $DE$?", 1.0),
        ("$\\boxed{\\sqrt{2.5}}$", "\\sqrt{2.5}", "Simplify $\\sqrt{2.5}$.", 1.0),
        ("$\\boxed{3.5}$", "3.5", SIMPLEST, 1.0),
        # batch 8 (gemma2-2b, a held-out false accept read after its number was recorded): the answer only
        # restates the expression the question asks to simplify. Still accepted: a chain that ends in the
        # simplified form, a reference that is the quoted expression, the same answer to another question.
        ("**5. FORMAT:**\n\n$\\boxed{\\sqrt{242} \\approx 15.6}$", ROOT, SIMPLIFY, 0.0),
        ("$\\boxed{\\sqrt{242}}$", ROOT, SIMPLIFY, 0.0),
        ("$\\boxed{x = \\sqrt{242}}$", ROOT, SIMPLIFY, 0.0),
        ("$\\boxed{\\sqrt{242} = 11\\sqrt{2}}$", ROOT, SIMPLIFY, 1.0),
        ("$\\boxed{\\frac{2}{3}}$", "\\frac{2}{3}", "Simplify $\\frac{2}{3}$.", 1.0),
        ("$\\boxed{\\sqrt{242} \\approx 15.6}$", ROOT, "What is $\\sqrt{242}$ exactly?", 1.0),
        ("$\\boxed{\\sqrt{242}}$", ROOT, None, 1.0),
    ] + OPTION_CONTENT + REWRITTEN_AS,
)
def test_forms_that_the_question_decides(response, reference, prompt, reward):
    assert score(response, reference, prompt) == reward


def test_the_corpus_rows_name_their_source_and_split():
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    assert len(rows) >= 250 and len({r["id"] for r in rows}) == len(rows)
    assert {r["split"] for r in rows} == {"dev", "heldout"}
    assert all(len(r["source"]["commit"]) == 40 and r["source"]["repo"] and r["source"]["path"] for r in rows)
    assert all(r.get("careful_note") for r in rows if "careful_verdict" in r)
    # the split is fixed by the row id alone (the parity of its SHA-256), never by a verdict
    parity = {r["id"]: int(hashlib.sha256(r["id"].encode()).hexdigest(), 16) % 2 for r in rows}
    assert all(r["split"] == ("dev" if parity[r["id"]] == 0 else "heldout") for r in rows)


# Dev rows where the verifier and the careful grader differ by the verifier's documented policy, each with its reason
# (docs/verifiers/math.md); the labels stay as the careful grader set them. Only false rejects may be kept.
KEPT_BY_POLICY = {
    # batch 54: "the answer is probably E, go broke." The careful grader (as batch 43's for "probably C") reads one
    # choice after "probably" as the answer; the verifier's hedge policy keeps "probably B" a hedge ("most likely B"
    # answers a question asking which option is likeliest; "probably" states a doubt).
    "kojima-takeshi188/zero_shot_cot:log/commonsensqa_zero_shot_cot.log#350": "probably, a hedge",
    # batch 71: "the answer (Yes or No) is technically Yes, but it is such a small difference that it is not really
    # worth worrying about." The careful grader reads the "but" as weighing the margin, not the answer; the verifier
    # reads a word it does not list before the verdict ("technically Yes", often set against a practical "No") as
    # no plain answer, and a false reject is kept over a rule that could accept "technically yes, but no".
    "kojima-takeshi188/zero_shot_cot:log/strategyqa_zero_shot_cot.log#450": "technically, a qualified verdict",
    # batch 95: "the answer (Yes or No) is probably No." The careful grader (as for batch 90's held-out #588, the same
    # words) reads one verdict after "probably" as the answer; the verifier's hedge policy keeps "probably" a stated
    # doubt, as batch 54's "probably E, go broke." above.
    "kojima-takeshi188/zero_shot_cot:log/strategyqa_zero_shot_cot.log#686": "probably, a hedge",
}
# Dev false rejects whose careful label stands and whose general fix is not made yet (no policy keeps them): listed
# so the test still fails on any other miss, and removed when a rule reads them (docs/fidelity.md names each).
NOT_YET_FIXED = {
    # batch 72: an answer stated only in the opening sentence, in the question's words, for "What is the maximum number
    # of points where at least two of the circles intersect?" ("The maximum number of points ... is 12.", then its
    # derivation); the answer-first rule reads only "how many" questions.
    "pmemoli/Data-Science-Thesis:src/data/evaluation_results/samples_hendrycks_math_counting_and_prob_"
    "2025-08-14T17-30-20.695206.jsonl#doc172": "an opening answer to a 'what is the maximum number' question",
    # batch 93: a closing sentence that answers "By what integer factor must 9! be multiplied to equal 11!?" in the
    # question's own verb, "So, 9! must be multiplied by 110 to equal 11!." (after "= 110" on its own line); the
    # closing reader takes a value after "is"/"are", not after "multiplied by", and the sentence holds three numbers.
    "pmemoli/Data-Science-Thesis:src/data/evaluation_results/samples_hendrycks_math_counting_and_prob_"
    "2025-08-14T17-30-20.695206.jsonl#doc232": "a closing 'must be multiplied by N to equal ...' in the question's verb",
    # batch 95: "The answer (Yes or No) is specific to each Nordic country.", a blank line, then "Yes, a passport is
    # required for travel to all Nordic countries." (reference yes); the next-paragraph rule defers only after an
    # announcement that the answer follows, and an opening that says the answer varies is no such announcement.
    "kojima-takeshi188/zero_shot_cot:log/strategyqa_zero_shot.log#1495": "a 'specific to each' opening, then 'Yes, ...'",
    # batch 102: the FORMAT closing "The solution in interval notation is **(5, ∞)**." (no box; reference (5,\infty)),
    # the same line as batch 25's held-out gemma2-9b baseline math_00312, read and kept then: "The solution ... is"
    # opens worked solutions as often as it states one, and no answer is read from it ("The answer is **(5, ∞)**."
    # is read). A rule for a closing "The solution in <the notation asked> is" needs guards not written yet.
    "labrem/neus2026-labre:results/experiment_gemma2-2b_openmath_greedy_0.0_260204_1644.md#math_00312": (
        "a closing 'The solution in interval notation is **...**.'"
    ),
    # batch 101: a response with no '$' that closes "So, Bobbi and her family will arrive at their destination at 4:30
    # p.m." (after "2:30 p.m. + 2 hours = 4:30 p.m.") for "at what time in the afternoon will they arrive", reference
    # \text{4:30 p.m.}; the closing reader takes no clock reading from a sentence ("The time is 4:30 p.m." is not read
    # either), only from a box or an "The answer is:" line.
    "pmemoli/Data-Science-Thesis:src/data/evaluation_results/samples_hendrycks_math_prealgebra_"
    "2025-08-14T17-30-20.695206.jsonl#doc298": "a clock reading closing a sentence, 'at 4:30 p.m.'",
    # batch 101 (part 3): a response with no '$' that closes "Therefore, the ball must be passed 330 times before the
    # passing drill is over." (after "110 passes/round * 3 rounds = 330 passes") for "How many times must the ball be
    # passed", reference 330; the closing reader takes a value after "is"/"are", not after the question's own verb.
    "pmemoli/Data-Science-Thesis:src/data/evaluation_results/samples_hendrycks_math_prealgebra_"
    "2025-08-14T17-30-20.695206.jsonl#doc305": "a closing 'must be passed N times' in the question's verb",
    # batch 101 (part 3): a response with no '$' that closes 'Therefore, the letter in the 2009th position is "M".' for
    # "what letter will occur in the 2009th position?", reference \text{M}; a letter in quotation marks after "is" is
    # not read as the answer.
    "pmemoli/Data-Science-Thesis:src/data/evaluation_results/samples_hendrycks_math_num_theory_"
    "2025-08-14T17-30-20.695206.jsonl#doc295": "a quoted letter closing a sentence, 'is \"M\".'",
}


def test_dev_split_agrees_with_a_careful_grader():
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    dev = [r for r in rows if r["split"] == "dev"]
    graded = [(r, score(r["response"], r["reference"], r.get("prompt")) > 0.5) for r in dev]  # as a trainer sends it
    label = {r["id"]: r.get("careful_verdict", r["authors_verdict"]) for r in dev}
    false_accepts = [r["id"] for r, got in graded if got and not label[r["id"]]]
    wrong = {r["id"] for r, got in graded if got != label[r["id"]]}
    assert not false_accepts
    expected = set(KEPT_BY_POLICY) | set(NOT_YET_FIXED)
    assert wrong == expected, sorted(wrong ^ expected)


# batch 7 (gemma-4-31B on the gaokao paper, a held-out false reject read after its number was recorded): two blanks
# answered in one box, each value labelled by what it is, a function's value at a given point among them. Not a
# wrong value, another point against a labelled reference, an expression with a variable.
@pytest.mark.parametrize(
    ("answer", "reference", "reward"),
    [
        ("\\theta = \\frac{3\\pi}{2}, f(\\frac{2\\pi}{3}) = 1", "\\frac{3\\pi}{2}, 1", 1.0),
        ("f(2) = 5", "5", 1.0),
        ("f(\\sqrt{2}) = 5", "5", 1.0),
        ("\\theta = \\frac{3\\pi}{2}, f(\\frac{2\\pi}{3}) = 2", "\\frac{3\\pi}{2}, 1", 0.0),
        ("f(2) = 5", "6", 0.0),
        ("f(3) = 5", "f(2) = 5", 0.0),
        ("f(2) = x + 3", "5", 0.0),
        # batch 10 (gemma2-2b, a held-out false accept): `S = 3G` for "how many treeks ...", reference 3: a one-letter
        # unit symbol is matched as SI writes it, so an upper-case letter after a number is a variable, not grams.
        ("S = 3G", "3", 0.0), ("3G", "3", 0.0), ("2M", "2", 0.0), ("4H", "4", 0.0), ("5S", "5", 0.0),
        ("3g", "3", 1.0), ("3 g", "3", 1.0), ("5m", "5", 1.0), ("2 h", "2", 1.0), ("30s", "30", 1.0),
        ("2L", "2", 1.0), ("2 l", "2", 1.0), ("3 grams", "3", 1.0), ("5 Meters", "5", 1.0), ("S = 3", "3", 1.0),
    ],
)
def test_boxed_forms_read_after_the_held_out_numbers(answer, reference, reward):
    assert score(f"$\\boxed{{{answer}}}$", reference) == reward, answer


# batch 13 (gemma2-9b, a dev row): a boxed matrix, then under VERIFY "The final answer is consistent with the given
# information and the steps taken." The phrase judges the answer given before it and states no value of its own,
# so the box stays the answer (the phrase replaced it before). Not where the phrase's statement holds a value, a
# denial, a wrong box, or a verdict with no answer before it.
VECTOR = "\\begin{pmatrix} -2 \\\\ -14 \\\\ -7 \\end{pmatrix}"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        ("\\[\\mathbf{A} \\mathbf{v} = \\boxed{" + VECTOR + "}\\]\n\n**4. VERIFY:**\n\nThe calculations are "
         "straightforward. The final answer is consistent with the given information and the steps taken.", VECTOR,
         1.0),
        ("So $x = 5$, that is \\boxed{5}. The final answer is correct.", "5", 1.0),
        ("So \\boxed{5}. The answer is verified by substitution.", "5", 1.0),
        ("So \\boxed{5}. The final answer is correct: 7.", "5", 0.0),
        ("So \\boxed{5}. The final answer is correct, it is $7$.", "5", 0.0),
        ("So \\boxed{5}. The final answer is not correct.", "5", 0.0),
        ("So \\boxed{4}. The final answer is consistent with the given information.", "5", 0.0),
        ("The final answer is correct.", "5", 0.0),
    ],
)
def test_a_verdict_on_the_answer_does_not_replace_it(response, reference, reward):
    assert score(response, reference) == reward, response


# batch 13 (gemma2-2b, a dev row): "How many possible numbers could they be thinking of?" answered by the closing
# "There are **four** possible numbers that Rick and Steve could be thinking of." A count followed by the question's
# own words, in digits or a number word, answers it (its "could be" repeats the question; no answer before). Not
# without the question, with other words, a wrong count, an alternative, a hedge, a denial, a second number, a
# condition, or a word that is no number.
RICK = ("Problem: Rick is thinking of a positive factor of $14$ and Steve is thinking of a positive factor of $42$.  "
        "If Rick and Steve are thinking of the same number, how many possible numbers could they be thinking of?")
PARABOLA = "Problem: How many $y$-intercepts does the graph of the parabola $x = y^2 - 4y - 1$ have?"
INTERCEPTS = ("* y = 2 + √5\n* y = 2 - √5\n\nThese are the points where the parabola intersects the y-axis.\n\n\n"
              "**5. FORMAT:**\n\n")
FACTORS = ("* The common factors are: 1, 2, 7, 14\n\n**4. VERIFY:**\n\nThe possible numbers Rick and Steve could be "
           "thinking of are 1, 2, 7, and 14.\n\n\n**5. FORMAT:**\n\n")


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        (FACTORS + "There are **four** possible numbers that Rick and Steve could be thinking of. \n", "4", RICK, 1.0),
        ("There are 4 possible numbers that they could be thinking of.", "4", RICK, 1.0),
        ("There are exactly twelve possible numbers.", "12", RICK, 1.0),
        ("There are four possible numbers.", "4", "How many possible numbers are there?", 1.0),
        ("There are four possible numbers.", "4", None, 0.0),
        ("There are four possible numbers.", "5", RICK, 0.0),
        ("There are four possible pairs.", "4", "How many possible numbers are there?", 0.0),
        ("There are four possible numbers or five.", "4", RICK, 0.0),
        ("There are maybe four possible numbers.", "4", RICK, 0.0),
        ("There are four possible numbers that are not 14.", "4", RICK, 0.0),
        ("There are four possible numbers that perhaps they mean.", "4", RICK, 0.0),
        ("There are four possible numbers, but only 2 are even.", "4", RICK, 0.0),
        ("There are four possible numbers if 14 counts", "4", RICK, 0.0),
        ("There are umpteen possible numbers.", "4", RICK, 0.0),
        # batch 13 second part (gemma2-2b, a dev row): a subject that "has" the count, then a colon and the items
        (INTERCEPTS + "The graph of the parabola has **two** y-intercepts: (0, 2 + √5) and (0, 2 - √5). \n\n", "2",
         PARABOLA, 1.0),
        ("The graph of the parabola has two y-intercepts.", "2", PARABOLA, 1.0),
        ("The graph has 2 y-intercepts: (0, 1) and (0, 3).", "2", PARABOLA, 1.0),
        ("There are four possible numbers: 1, 2, 7 and 14.", "4", RICK, 1.0),
        ("The graph of the parabola has two y-intercepts.", "2", None, 0.0),
        ("The graph of the parabola has two x-intercepts.", "2", PARABOLA, 0.0),
        ("The graph of the parabola has three y-intercepts: (0, 1), (0, 2) and (0, 3).", "2", PARABOLA, 0.0),
        ("The graph of the parabola has two y-intercepts: (0, 1) or (0, 3).", "2", PARABOLA, 0.0),
        ("The graph of the parabola has maybe two y-intercepts.", "2", PARABOLA, 0.0),
        ("The graph of the parabola has two y-intercepts that are not real.", "2", PARABOLA, 0.0),
        ("Its graph has 3 points and two y-intercepts.", "2", PARABOLA, 0.0),
        # batch 41 (openmath gemma2-2b, a dev row): the relative clause without its "that", a subject (a pronoun or
        # a name or two) then an auxiliary or modal verb, with no number word; the same guards hold
        (FACTORS + "There are **four** possible numbers Rick and Steve could be thinking of. \n", "4", RICK, 1.0),
        ("There are 4 possible numbers they could be thinking of.", "4", RICK, 1.0),
        ("There are four possible numbers Steve can pick.", "4", RICK, 1.0),
        ("There are four possible numbers Rick and Steve could be thinking of.", "5", RICK, 0.0),
        ("There are four possible numbers Rick and Steve could be thinking of.", "4", None, 0.0),
        ("There are four possible numbers they could perhaps be thinking of.", "4", RICK, 0.0),
        ("There are four possible numbers they could not be thinking of.", "4", RICK, 0.0),
        ("There are four possible numbers they could pick or five.", "4", RICK, 0.0),
        ("There are four possible numbers they could pick if 14 counts.", "4", RICK, 0.0),
        ("There are four possible numbers they could pick and three more.", "4", RICK, 0.0),
        ("There are four possible numbers they could pick from 14.", "4", RICK, 0.0),
        ("There are four possible numbers Rick likes best.", "4", RICK, 0.0),
        ("There are four possible numbers, roughly speaking.", "4", RICK, 0.0),
    ],
)
def test_a_count_in_the_question_own_words_answers_how_many(response, reference, prompt, reward):
    assert score(response, reference, prompt) == reward, response
