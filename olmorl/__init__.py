"""olmorl: verifiers and rewards for RL on language models, served over HTTP, with a pluggable trainer."""

__version__ = "0.1.0"

__all__ = ["__version__"]
