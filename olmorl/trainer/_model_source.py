"""Where the policy comes from, checked before anything starts: a local model directory, or a Hugging Face hub id
that is in the local cache or that the hub has. A wrong path is one line, not a minute of hub retries."""

from __future__ import annotations

import os
from pathlib import Path


class ModelNotFound(ValueError):
    """`model` names no model directory here, nor a hub model that can be had; the message says which."""


def check_model(model: str) -> None:
    """Raise ModelNotFound unless `model` can be loaded (honours HF_HUB_OFFLINE: offline, only the cache counts)."""
    from huggingface_hub import constants, try_to_load_from_cache
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotFound(f"model: {str(path.resolve())!r} is a directory without a config.json, not a saved model")
        return
    if path.exists():
        raise ModelNotFound(f"model: {str(path.resolve())!r} is a file, not a model directory")
    try:
        validate_repo_id(model)
    except HFValidationError:  # only a path can look like this
        raise ModelNotFound(f"model: no such directory: {str(path.resolve())!r}") from None
    if isinstance(try_to_load_from_cache(model, "config.json"), str):
        return
    where = f"model: {model!r} is not a directory (in {os.getcwd()}) nor a model in the Hugging Face cache"
    if constants.HF_HUB_OFFLINE:
        raise ModelNotFound(f"{where}, and HF_HUB_OFFLINE is set, so the hub is not asked")
    refusal = _ask_hub(model, constants.ENDPOINT)
    if refusal is not None:
        raise ModelNotFound(f"{where}, and {refusal}")


def _ask_hub(model: str, endpoint: str) -> str | None:
    """None if the hub has `model`; else why not, from one request (no retries: the caller fails fast)."""
    import httpx
    from huggingface_hub import get_token

    token = get_token()
    try:
        reply = httpx.get(f"{endpoint}/api/models/{model}", timeout=10, follow_redirects=True,
                          headers={"Authorization": f"Bearer {token}"} if token else {})
    except httpx.HTTPError as exc:
        return f"the hub ({endpoint}) cannot be reached: {exc or type(exc).__name__}"
    if reply.status_code == 200:
        return None
    if reply.status_code in (401, 403, 404):
        return f"the hub ({endpoint}) has no such model, or it is private or gated (HF_TOKEN) (HTTP {reply.status_code})"
    return f"the hub ({endpoint}) answered HTTP {reply.status_code}"
