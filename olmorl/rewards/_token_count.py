"""Completion token counts from the policy's Hugging Face tokenizer (`tokenizer.json`), for the `overlong` and
`length` verifiers where a trainer sends text, not token ids: OpenRLHF's remote reward route (the server's
`tokenizer` setting) and verl's reward function (its `tokenizer` reward kwarg).

The count is of the completion's text encoded again, special tokens as text (`<|im_end|>` counts as the one
token it is) and no special tokens added: the generated ids' count wherever the text encodes back to them, which
holds for what a model writes almost always (a non-canonical split can differ by a token or two). The file's own
truncation and padding are switched off, so a long completion is counted whole.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer


def tokenizer_file(path: str) -> Path:
    """The `tokenizer.json` that `path` names: the file itself, or the one inside the directory it names."""
    given = Path(path).expanduser()
    found = given / "tokenizer.json" if given.is_dir() else given
    if not found.is_file():
        raise ValueError(f"no tokenizer.json at {path!r}: give the policy's tokenizer.json, or the directory "
                         "holding it (a Hugging Face model directory)")
    return found


class TokenCounter:
    """Counts a text's tokens with one tokenizer, loaded once (the light `tokenizers` package, no transformers)."""

    def __init__(self, path: str) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ValueError("counting tokens needs the `tokenizers` package: pip install 'olmorl[tokenizer]'") from None

        file = tokenizer_file(path)
        try:
            tokenizer: Tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:  # tokenizers raises a bare Exception for a malformed file
            raise ValueError(f"cannot load the tokenizer {str(file)!r}: {exc}") from None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.path = str(file)
        self._tokenizer = tokenizer

    def counts(self, texts: list[str]) -> list[int]:
        """Each text's token count. encode_batch, not encode: it lets go of the GIL while it works (encode holds
        it: measured, a thread beside a 16k-token encode ran 22 ticks/s instead of 747), so a count running in a
        thread leaves the server's event loop free."""
        return [len(encoding.ids) for encoding in self._tokenizer.encode_batch(texts, add_special_tokens=False)]


@functools.lru_cache(maxsize=4)
def token_counter(path: str) -> TokenCounter:
    """One loaded tokenizer per path, per process (a reward function called per sample loads it once)."""
    return TokenCounter(path)
