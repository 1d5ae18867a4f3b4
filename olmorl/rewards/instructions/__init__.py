"""Instruction-following verification: the `ifeval` verifier and its 112 constraint checkers."""

from olmorl.rewards.instructions._constraints import CONSTRAINTS, Constraint, ConstraintError, Kwargs
from olmorl.rewards.instructions._ground_truth import ConstraintSpec, FuncSpec, parse_ground_truth
from olmorl.rewards.instructions._verifier import IFEvalOptions, IFEvalVerifier, loose_variants, rl_answer

__all__ = [
    "CONSTRAINTS",
    "Constraint",
    "ConstraintError",
    "ConstraintSpec",
    "FuncSpec",
    "IFEvalOptions",
    "IFEvalVerifier",
    "Kwargs",
    "loose_variants",
    "parse_ground_truth",
    "rl_answer",
]
