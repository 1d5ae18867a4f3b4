"""Every snippet of the README and the documentation site (docs/**/*.md) is a file in examples/ that a test runs:
a page shows the file as it is, and the output a page shows is what running it prints (timings aside). The site
builds with `mkdocs build --strict`, as CI builds it, and the README's links lead to files that exist."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from olmorl.rewards.service._local import LocalRewardServer

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"<!-- (file|output): (\S+) -->\n```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
# (page, kind, example path, language, the text the page shows), for every snippet on every page
SNIPPETS = [(page.relative_to(ROOT), kind, path, language, text) for page in PAGES
            for kind, path, language, text in BLOCK.findall(page.read_text())]
OUTPUTS = sorted({path for _, kind, path, _, _ in SNIPPETS if kind == "output"})
# DeepSpeed (imported by TRL) logs to stdout in this format; what a snippet prints is the rest.
THIRD_PARTY_LOG = re.compile(r"^\[\d{4}-\d\d-\d\d [^]]*\] \[(DEBUG|INFO|WARNING)\] .*\n", re.MULTILINE)
README_MAX_LINES = 250


@pytest.fixture(scope="module")
def server():
    with LocalRewardServer(workers=2) as srv:
        yield srv.url


def run_example(path: str, url: str, cwd: Path) -> str:
    source = (ROOT / path).read_text()
    env = {**os.environ, "OLMORL_URL": url, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("COLUMNS", None)  # tables as wide as on any terminal-less run
    if path == "examples/trl_grpo.py":  # the policy: a tiny model built here (no downloads), not the hub default
        from test_trl_grpo import tiny_model

        env["MODEL"] = tiny_model(cwd / "model")
    if path.endswith(".sh"):
        cmd = ["bash", "-c", source.replace("http://127.0.0.1:8000", url)]
    else:
        cmd = [sys.executable, str(ROOT / path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return THIRD_PARTY_LOG.sub("", proc.stdout)


def without_timings(text: str) -> str:
    text = re.sub(r'"elapsed_ms": [0-9.]+', '"elapsed_ms": 0', text)
    return re.sub(r" in [0-9.]+ s \([0-9.]+ rows/s\)", " in 0 s (0 rows/s)", text)  # olmorl-rewards verify


def text_lines(text: str) -> list[str]:
    """Lines as shown, timings aside; a centred title moves with the width of its numbers."""
    return [line.strip() for line in without_timings(text).splitlines()]


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


def test_the_pages_scanned_include_the_site():
    pages = {str(page) for page, *_ in SNIPPETS}
    assert "README.md" in pages and any(page.startswith("docs/") for page in pages), pages


def test_snippets_are_the_example_files():
    files = [(page, path, text) for page, kind, path, _, text in SNIPPETS if kind == "file"]
    assert files, "no page has a file snippet"
    for page, path, text in files:
        assert text == (ROOT / path).read_text(), f"{page}'s copy of {path} is stale"


def test_every_file_snippet_is_run_by_a_test():
    """A file shown without its output is run by another test, which names it, or imported by an example whose
    output is shown (examples/stand_in_judge.py)."""
    others = "".join(test.read_text() for test in (ROOT / "tests").glob("test_*.py") if test.name != "test_docs.py")
    shown_run = "".join((ROOT / path).read_text() for path in OUTPUTS)
    for page, kind, path, _, _ in SNIPPETS:
        if kind == "file" and path not in OUTPUTS:
            imported = re.search(rf"^from {Path(path).stem} import ", shown_run, re.MULTILINE)
            assert Path(path).stem in others or imported, (
                f"{page} shows {path}, which no test runs: show its output too")


def test_every_example_file_is_on_a_page():
    shown = {path for _, kind, path, _, _ in SNIPPETS if kind == "file"}
    for example in sorted((ROOT / "examples").glob("*.*")):  # the recipes in subdirectories have their own README
        assert example.relative_to(ROOT).as_posix() in shown, f"{example.name} is on no page"


@pytest.mark.parametrize("path", OUTPUTS)
def test_outputs_are_what_the_examples_print(server, path, tmp_path):
    printed = run_example(path, server, tmp_path)
    for page, kind, shown_path, language, shown in SNIPPETS:
        if kind != "output" or shown_path != path:
            continue
        if language == "json":
            assert json_documents(without_timings(printed)) == json_documents(without_timings(shown)), page
        else:
            assert text_lines(printed) == text_lines(shown), f"{page} shows another output of {path}"


def test_the_site_builds_strictly(tmp_path):
    """As CI builds it: any warning (a broken link or anchor, a page missing from the nav) fails the build."""
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    built = {page.relative_to(tmp_path / "site").as_posix() for page in (tmp_path / "site").rglob("index.html")}
    for page in (ROOT / "docs").rglob("*.md"):  # every page is on the site
        name = page.relative_to(ROOT / "docs").with_suffix("").as_posix()
        assert ("index.html" if name == "index" else f"{name.removesuffix('/index')}/index.html") in built, name


def test_the_readme_is_a_front_door_whose_links_resolve():
    """mkdocs checks the site's links; this checks the README's, anchors too (slugged as the site slugs them)."""
    from markdown.extensions.toc import slugify

    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    links = [link for link in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in link]
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        path, _, anchor = link.partition("#")
        assert (ROOT / path).exists(), f"README links to {path}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), re.MULTILINE)
            assert anchor in {slugify(heading, "-") for heading in headings}, f"README links to {link}: no such heading"


def test_the_settings_reference_is_generated_from_the_settings_and_current():
    """docs/settings.md is what `python -m olmorl.rewards._settings_doc` writes from the Settings fields; the README
    points at it instead of restating defaults (its chunk defaults had drifted: 0.005/64 against 0.025/256)."""
    from olmorl.rewards._settings import Settings
    from olmorl.rewards._settings_doc import DOC, main, render

    assert main(["--check"]) == 0, "docs/settings.md is stale: run python -m olmorl.rewards._settings_doc"
    text = render()
    for name, field in Settings.model_fields.items():
        assert f"| `{name}` | `OLMORL_{name.upper()}` |" in text or name in ("judge", "sandbox", "sessions", "sql", "swe")
    assert "| `chunk_target_s` | `OLMORL_CHUNK_TARGET_S` | `0.025` | pool items travel in chunks" in text
    assert "| `base_url` | `OLMORL_JUDGE_BASE_URL` | unset |" in text  # the nested sections, with their prefixes
    assert "docs/settings.md" in (DOC.parents[1] / "README.md").read_text()
