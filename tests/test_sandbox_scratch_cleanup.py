"""Cleaning a scratch dir never acts through a symlink the program planted there."""

from __future__ import annotations

import os
import stat

from olmorl.sandbox._cleanup import clean_scratch


def test_clean_scratch_does_not_follow_planted_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("host file")
    outside.chmod(0o755)
    scratch = tmp_path / "scratch"
    (scratch / "nested").mkdir(parents=True)
    (scratch / "nested" / "f").write_text("x")
    os.symlink(outside, scratch / "link_to_outside")
    os.symlink(outside, scratch / "nested" / "deep_link")

    clean_scratch(str(scratch))

    assert os.listdir(scratch) == []
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755
    assert (outside / "keep.txt").read_text() == "host file"
