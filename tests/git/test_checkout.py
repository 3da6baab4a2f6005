"""ScratchCheckout: any commit written to a folder of our own; the repository never touched, and
nothing its config names ever run."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from timeline.git.checkout import ScratchCheckout
from timeline.git.locate import locate
from timeline.git.objects import ObjectStoreError


def digest(root: Path) -> dict[str, str]:
    """Every path under ``root`` (``.git`` included) with its bytes' hash (or ``dir``/``link``)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = "link " + os.readlink(path)
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = f"{path.stat().st_mode:o} " + hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_each_commit_is_written_whole_into_a_fresh_folder(bench):
    bench.init()
    first = bench.commit("one", file="a.txt", content="a1\n")
    bench.commit("two", file="sub/b.txt", content="b\n")
    second = bench.commit("three", file="a.txt", content="a2\n")
    before = digest(bench.repo)
    with ScratchCheckout(locate(bench.repo)) as scratch:
        folder = scratch.folder
        tree = scratch.check_out(second)
        assert files_of(tree) == {"a.txt": b"a1\na2\n", "sub/b.txt": b"b\n"}
        (tree / "build.o").write_bytes(b"left by a build")
        assert files_of(scratch.check_out(first)) == {"a.txt": b"a1\n"}  # nothing of the last one left
        assert scratch.commit == first and not (tree / ".git").exists()
        assert not folder.is_relative_to(bench.repo)
    assert not folder.exists()
    assert digest(bench.repo) == before


def test_nothing_the_repository_configures_runs(bench, tmp_path):
    bench.init()
    ran = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {ran}\ncat\n')
    script.chmod(0o755)
    bench.commit("attributes", file=".gitattributes", content="* filter=evil diff=evil\n")
    commit = bench.commit("data", file="data.txt", content="raw\n")
    for key in ("filter.evil.smudge", "filter.evil.process", "core.fsmonitor", "core.pager", "core.hooksPath"):
        bench.git("config", key, str(script) if key != "core.hooksPath" else str(tmp_path), cwd=bench.repo)
    bench.git("config", "filter.evil.required", "true", cwd=bench.repo)
    for hook in ("post-checkout", "post-index-change", "reference-transaction"):
        (tmp_path / hook).symlink_to(script)
        (bench.repo / ".git" / "hooks" / hook).symlink_to(script)
    before = digest(bench.repo)
    with ScratchCheckout(locate(bench.repo)) as scratch:
        tree = scratch.check_out(commit)
        assert (tree / "data.txt").read_bytes() == b"raw\n"  # no smudge filter ran
    assert not ran.exists()
    assert digest(bench.repo) == before


def test_resolve_takes_ids_and_unique_prefixes_only(bench):
    bench.init()
    commit = bench.commit("one")
    with ScratchCheckout(locate(bench.repo)) as scratch:
        assert scratch.resolve(commit[:7].upper()) == commit
        tree = bench.git("rev-parse", "HEAD^{tree}")
        for name, message in (
            ("HEAD", "not a commit id"),
            ("--output=x", "not a commit id"),
            ("abc", "not a commit id"),
            ("0123456789abcdef", "unknown commit"),
            (tree, "unknown commit"),
        ):
            with pytest.raises(ObjectStoreError, match=message):
                scratch.resolve(name)


def test_the_first_parent_line_and_ancestry(bench):
    bench.init()
    base = bench.commit("base")
    bench.git("checkout", "-q", "-b", "side")
    side = bench.commit("side", file="side.txt")
    bench.git("checkout", "-q", "main")
    main1 = bench.commit("main 1", file="main.txt")
    bench.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = bench.sha()
    main2 = bench.commit("main 2", file="main.txt")
    with ScratchCheckout(locate(bench.repo)) as scratch:
        assert scratch.first_parent_line(base, main2) == [main1, merge, main2]  # not the side commit
        assert scratch.first_parent_line(side, main2) == [merge, main2]  # the merge brought it in
        assert scratch.is_ancestor(side, main2) and not scratch.is_ancestor(side, main1)
