"""Generated responses and kwargs for the IFEval differential test (deterministic, seeded)."""

from __future__ import annotations

import json
import random

WORDS = (
    "the cat sat on a mat and looked at category of ocean waves while we walked to market because "
    "data science is fun but slow people often say that good food makes happy days in summer city "
    "river mountain history president problem signal morning agency working welcome brush potato"
).split()
FOREIGN = [
    "Le chat est assis sur le tapis et regarde la mer pendant que nous marchons.",
    "Der Hund läuft schnell durch den Park und spielt mit dem Ball im Sommer.",
    "El perro corre rápidamente por el parque y juega con la pelota en verano.",
    "Il gatto dorme sul divano mentre la famiglia guarda la televisione stasera.",
    "Кошка сидит на ковре и смотрит на море, пока мы идём на рынок.",
    "日本の夏はとても暑いですが、祭りや花火が楽しいです。",
    "1234 5678 90", "😀 😀 🎉", "OK", "Hello",
]
ABBREV = ["Dr. Smith", "Mr. Jones", "the U.S. army", "e.g. apples", "at 5 p.m. today", "J. R. Tolkien", "3.5 kg", "etc. and more"]
MARKS = [".", ".", ".", "?", "!", "...", "?!"]


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(2, 12))]
    if rng.random() < 0.15:
        words.insert(rng.randint(0, len(words)), rng.choice(ABBREV))
    if rng.random() < 0.2:
        i = rng.randrange(len(words))
        words[i] = words[i].upper()
    if rng.random() < 0.15:
        words.insert(rng.randint(0, len(words)), rng.choice(["don't", "DON'T", "it's", "cannot", "(maybe)", '"quoted"', "x--y", "well,"]))
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    if rng.random() < 0.2:
        text = text.replace(" ", ", ", 1)
    return text + rng.choice(MARKS)


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(1, 5)))


def response(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.08:
        return rng.choice(FOREIGN)
    if kind < 0.14:
        obj = {"a": rng.randint(0, 9), "b": [sentence(rng)]}
        body = json.dumps(obj) if rng.random() < 0.7 else rng.choice(["42", "null", "NaN", "{bad json"])
        return rng.choice(["", "```json\n", "```\n"]) + body + rng.choice(["", "\n```"])
    if kind < 0.2:
        return paragraph(rng).upper() if rng.random() < 0.5 else paragraph(rng).lower()
    parts = []
    sep = rng.choice(["\n\n", "\n***\n", " *** ", "\n", "\n******\n"])
    for _ in range(rng.randint(1, 4)):
        block = paragraph(rng)
        r = rng.random()
        if r < 0.15:
            block = "\n".join(rng.choice(["* ", "- ", "*  ", "-"]) + sentence(rng) for _ in range(rng.randint(1, 5)))
        elif r < 0.25:
            block = f"{rng.choice(['SECTION', 'Section', 'PARAGRAPH'])} {rng.randint(1, 4)}\n" + block
        elif r < 0.35:
            block = block.replace(" ", " *highlight* ", 1) if rng.random() < 0.5 else block + " **bold part**"
        elif r < 0.42:
            block = "<<" + sentence(rng)[:-1] + ">>\n" + block
        elif r < 0.5:
            block += " [name] and [address]"
        parts.append(block)
    text = sep.join(parts)
    r = rng.random()
    if r < 0.1:
        text += "\n\nP.S. " + sentence(rng)
    elif r < 0.15:
        text += "\nP.P.S " + sentence(rng)
    elif r < 0.22:
        text += " My answer is " + rng.choice(["yes.", "no.", "maybe.", "perhaps."])
    elif r < 0.3:
        text = '"' + text + '"'
    elif r < 0.36:
        text += " Is there anything else I can help with?"
    return text


RELATIONS = ["less than", "at least"]


def kwargs_for(instruction_id: str, text: str, rng: random.Random) -> dict:
    pick = lambda: rng.choice(WORDS)  # noqa: E731
    table = {
        "keywords:existence": lambda: {"keywords": [pick() for _ in range(rng.randint(1, 3))]},
        "keywords:frequency": lambda: {"keyword": pick(), "frequency": rng.randint(1, 4), "relation": rng.choice(RELATIONS)},
        "keywords:forbidden_words": lambda: {"forbidden_words": [pick() for _ in range(rng.randint(1, 3))]},
        "keywords:letter_frequency": lambda: {"letter": rng.choice("aeiostxz"), "let_frequency": rng.randint(1, 12), "let_relation": rng.choice(RELATIONS)},
        "language:response_language": lambda: {"language": rng.choice(["en", "fr", "de", "es", "it", "ru", "ja"])},
        "length_constraints:number_sentences": lambda: {"num_sentences": rng.randint(1, 8), "relation": rng.choice(RELATIONS)},
        "length_constraints:number_paragraphs": lambda: {"num_paragraphs": rng.randint(1, 4)},
        "length_constraints:number_words": lambda: {"num_words": rng.randint(5, 60), "relation": rng.choice(RELATIONS)},
        "length_constraints:nth_paragraph_first_word": lambda: {"num_paragraphs": (n := rng.randint(1, 4)), "nth_paragraph": rng.randint(1, n), "first_word": rng.choice([pick(), (text.split() or ["x"])[0].strip('"').lower()])},
        "detectable_content:number_placeholders": lambda: {"num_placeholders": rng.randint(1, 3)},
        "detectable_content:postscript": lambda: {"postscript_marker": rng.choice(["P.S.", "P.P.S", "Note:"])},
        "detectable_format:number_bullet_lists": lambda: {"num_bullets": rng.randint(1, 5)},
        "detectable_format:number_highlighted_sections": lambda: {"num_highlights": rng.randint(1, 3)},
        "detectable_format:multiple_sections": lambda: {"section_spliter": rng.choice(["Section", "SECTION", "PARAGRAPH"]), "num_sections": rng.randint(1, 3)},
        "combination:repeat_prompt": lambda: {"prompt_to_repeat": text[: rng.randint(1, 30)] if rng.random() < 0.5 else sentence(rng)},
        "startend:end_checker": lambda: {"end_phrase": text[-rng.randint(1, 20):] if rng.random() < 0.5 else "Any other questions?"},
        "change_case:capital_word_frequency": lambda: {"capital_frequency": rng.randint(0, 4), "capital_relation": rng.choice(RELATIONS)},
    }
    return table[instruction_id]() if instruction_id in table else {}
