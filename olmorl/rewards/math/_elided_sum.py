"""A polynomial written with its middle terms elided (`x^8 + x^7 + x^6 + ... + x + 1`).

A careful grader reads such a sum as every term of the pattern its written terms fix: monomials of one variable,
one coefficient (or one coefficient with alternating signs), exponents that step evenly. The written terms must fix
that pattern without doubt, so anything else (numbers alone, two variables, uneven steps, a written term off the
pattern, nothing elided) is left as written, which does not parse and so matches nothing. The expansion never
consults the reference, so an ellipsis can only stand for the terms it was written for: a wrong polynomial stays
wrong (batch 59's held-out false reject, docs/fidelity.md)."""

from __future__ import annotations

import re

_ELLIPSIS_RE = re.compile(r"^(?:\.\.\.|\\[lc]?dots(?:b)?|…)$")
_HAS_ELLIPSIS_RE = re.compile(r"\.\.\.|\\[lc]?dots|…")
# An integer coefficient, then optionally one variable with an integer exponent: `3x^{4}`, `x^2`, `x`, `7`.
_TERM_RE = re.compile(r"(?P<coef>\d+)?\s*(?:(?P<var>[a-zA-Z])(?:\s*\^\s*(?:(?P<exp>\d+)|\{\s*(?P<bexp>\d+)\s*\}))?)?")
_MAX_TERMS = 200  # a longer pattern is not a written answer


def has_ellipsis(text: str) -> bool:
    return _HAS_ELLIPSIS_RE.search(text) is not None


def expand_elided_sum(text: str) -> str:
    """The elided sum written out in full, or `text` unchanged when it is no such sum."""
    if not has_ellipsis(text):
        return text
    pieces = re.split(r"([+-])", text.strip())
    signed: list[tuple[int, str]] = []
    sign = 1
    for i, piece in enumerate(pieces):
        if piece in "+-" and piece:
            sign = -1 if piece == "-" else 1
            continue
        piece = piece.strip()
        if not piece:
            if i == 0:
                continue  # a leading sign
            return text  # two signs in a row
        signed.append((sign, piece))
        sign = 1
    ellipses = [i for i, (_, body) in enumerate(signed) if _ELLIPSIS_RE.match(body)]
    if len(ellipses) != 1:
        return text
    cut = ellipses[0]
    terms = [_monomial(s, body) for s, body in signed[:cut] + signed[cut + 1:]]
    if any(term is None for term in terms):
        return text
    written = [term for term in terms if term is not None]
    variables = {var for _, var, _ in written if var}
    if len(variables) != 1 or cut < 2 or len(written) - cut < 1:
        return text
    (var,) = variables
    (c0, _, e0), (c1, _, e1) = written[0], written[1]
    step, ratio = e1 - e0, (1 if c1 == c0 else -1 if c1 == -c0 else 0)
    if step == 0 or ratio == 0:
        return text
    resume, remainder = divmod(written[cut][2] - e0, step)
    if remainder or resume <= cut or resume + len(written) - cut > _MAX_TERMS:
        return text  # off the step, or nothing elided
    indices = list(range(cut)) + list(range(resume, resume + len(written) - cut))
    if any(e != e0 + i * step or c != c0 * ratio**i for (c, _, e), i in zip(written, indices)):
        return text
    count = resume + len(written) - cut
    return _write([(c0 * ratio**i, e0 + i * step) for i in range(count)], var) if e0 + (count - 1) * step >= 0 else text


def _monomial(sign: int, body: str) -> tuple[int, str, int] | None:
    """(signed coefficient, variable or "", exponent) of one written term, or None."""
    match = _TERM_RE.fullmatch(body)
    if match is None or not body:
        return None
    coef = int(match["coef"]) if match["coef"] else 1
    if coef == 0:
        return None
    if not match["var"]:
        return (sign * coef, "", 0) if match["coef"] else None
    exponent = match["exp"] or match["bexp"]
    return sign * coef, match["var"], int(exponent) if exponent else 1


def _write(terms: list[tuple[int, int]], var: str) -> str:
    out = []
    for i, (coef, exponent) in enumerate(terms):
        power = "" if exponent == 0 else var if exponent == 1 else f"{var}^{{{exponent}}}"
        magnitude = str(abs(coef)) if abs(coef) != 1 or not power else ""
        sign = ("-" if coef < 0 else "") if i == 0 else (" - " if coef < 0 else " + ")
        out.append(f"{sign}{magnitude}{power}")
    return "".join(out)
