"""Every README snippet is a file in examples/ that this test runs: the README shows the file as it
is, and the output the README shows is what running it prints (timings aside)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from olmorl.rewards._local import LocalRewardServer

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"<!-- (file|output): (\S+) -->\n```\w*\n(.*?)^```$", re.DOTALL | re.MULTILINE)
SNIPPETS = {(kind, path): text for kind, path, text in BLOCK.findall(README)}


@pytest.fixture(scope="module")
def server():
    with LocalRewardServer(workers=2) as srv:
        yield srv.url


def run_example(path: str, url: str) -> str:
    source = (ROOT / path).read_text()
    env = {**os.environ, "OLMORL_URL": url}
    if path.endswith(".sh"):
        cmd = ["bash", "-c", source.replace("http://127.0.0.1:8000", url)]
    else:
        cmd = [sys.executable, str(ROOT / path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def without_timings(text: str) -> str:
    return re.sub(r'"elapsed_ms": [0-9.]+', '"elapsed_ms": 0', text)


def json_documents(text: str) -> list:
    """Every JSON document in `text`, in order (a shell example may print several)."""
    decoder, documents, at = json.JSONDecoder(), [], 0
    text = text.strip()
    while at < len(text):
        document, at = decoder.raw_decode(text, at)
        documents.append(document)
        while at < len(text) and text[at].isspace():
            at += 1
    return documents


def test_readme_snippets_are_the_example_files():
    files = [path for kind, path in SNIPPETS if kind == "file"]
    assert files, "the README has no file snippets"
    for path in files:
        assert SNIPPETS[("file", path)] == (ROOT / path).read_text(), f"README copy of {path} is stale"


@pytest.mark.parametrize("path", sorted(path for kind, path in SNIPPETS if kind == "output"))
def test_readme_outputs_are_what_the_examples_print(server, path):
    printed = run_example(path, server)
    shown = SNIPPETS[("output", path)]
    if path.endswith(".sh"):
        assert json_documents(without_timings(printed)) == json_documents(without_timings(shown))
    else:
        assert printed == shown


def test_the_settings_reference_is_generated_from_the_settings_and_current():
    """docs/settings.md is what `python -m olmorl.rewards._settings_doc` writes from the Settings fields; the README
    points at it instead of restating defaults (its chunk defaults had drifted: 0.005/64 against 0.025/256)."""
    from olmorl.rewards._settings import Settings
    from olmorl.rewards._settings_doc import DOC, main, render

    assert main(["--check"]) == 0, "docs/settings.md is stale: run python -m olmorl.rewards._settings_doc"
    text = render()
    for name, field in Settings.model_fields.items():
        assert f"| `{name}` | `OLMORL_{name.upper()}` |" in text or name in ("judge", "sandbox", "sessions", "sql")
    assert "| `chunk_target_s` | `OLMORL_CHUNK_TARGET_S` | `0.025` | pool items travel in chunks" in text
    assert "| `base_url` | `OLMORL_JUDGE_BASE_URL` | unset |" in text  # the nested sections, with their prefixes
    assert "docs/settings.md" in (DOC.parents[1] / "README.md").read_text()
