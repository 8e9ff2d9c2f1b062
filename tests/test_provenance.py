"""Which code made a result: the source digest and the notes a resume prints."""

from __future__ import annotations

import shutil

from fattorus import paths, provenance


def test_the_digest_names_the_source_tree(tmp_path):
    """Two copies of one tree share a digest; any byte changed, a file added or renamed changes it."""
    copy = tmp_path / "fattorus"
    shutil.copytree(paths.package_dir(), copy, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    here = provenance.source_digest()
    assert provenance.tree_digest(copy) == here == provenance.tree_digest(paths.package_dir())
    assert len(here) == provenance.DIGEST_CHARS
    (copy / "paths.py").write_text((copy / "paths.py").read_text() + "\n# an edit\n")
    edited = provenance.tree_digest(copy)
    (copy / "extra.py").write_text("")
    added = provenance.tree_digest(copy)
    shutil.move(copy / "extra.py", copy / "other.py")
    assert len({here, edited, added, provenance.tree_digest(copy)}) == 4
    renamed = provenance.tree_digest(copy)
    (copy / "notes.txt").write_text("not code")  # only Python files count
    assert provenance.tree_digest(copy) == renamed
    (copy / "other.py").unlink()
    assert provenance.tree_digest(copy) == edited


def test_other_source_says_whether_a_result_is_this_codes():
    assert provenance.other_source(provenance.stamp()) is None
    assert provenance.stamp()["version"] and provenance.stamp()["source"] == provenance.source_digest()
    other = provenance.other_source({"version": "0.1.0", "source": "000000000000"})
    assert other == f"made by another fattorus source (000000000000, this one {provenance.source_digest()})"
    for missing in (None, {}, {"version": "0.1.0"}, "text"):
        assert provenance.other_source(missing) == "made before fattorus recorded its source"
