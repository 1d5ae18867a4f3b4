"""olmorl: verifiers and rewards for RL on language models, served over HTTP, with a pluggable trainer.

`olmorl.verify(items, **settings)` (and `averify`, `InProcessVerifier`, `AsyncInProcessVerifier`) score items in
this process, as `POST /v1/verify` would; they need the `[server]` extra and are imported when first used.
"""

__version__ = "0.1.0"

__all__ = ["AsyncInProcessVerifier", "InProcessVerifier", "__version__", "averify", "verify"]

_IN_PROCESS = ("AsyncInProcessVerifier", "InProcessVerifier", "averify", "verify")


def __getattr__(name: str):
    # Imported on first use: `import olmorl` (the client install: httpx and pydantic) loads no server code.
    if name in _IN_PROCESS:
        from olmorl.rewards.service import _inprocess

        return getattr(_inprocess, name)
    raise AttributeError(f"module 'olmorl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_IN_PROCESS})
