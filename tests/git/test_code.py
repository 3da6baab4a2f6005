"""read_code and the ObjectStore queries under it (tree, blobs, changed_lines) on real
repositories: what the server imports, what a commit changed, and that a hostile repository
runs nothing and changes nothing."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline.cache import PARSES_MAGIC, REACH_MAGIC, ParseCache
from timeline.git import code
from timeline.git.code import read_code
from timeline.git.objects import ObjectStore, ObjectStoreError
from timeline.imports import DEFAULT_ENTRIES, CodeFacts
from timeline.records import ChangedLine

SGLANG = DEFAULT_ENTRIES["sglang-server"]

SERVER_ARGS = "from dataclasses import dataclass\n\n\n@dataclass\nclass ServerArgs:\n    model_path: str = ''\n"


def write(repo: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@pytest.fixture
def sglang_repo(bench):
    """An SGLang-like repository: v1; c2 adds a flag to server_args.py; c3 touches only the
    diffusion package nothing imports; c4 only docs (v2 = c4)."""
    repo = bench.init()
    write(
        repo,
        {
            "python/sglang/__init__.py": "",
            "python/sglang/launch_server.py": "import sys\n\nfrom sglang.srt.server import launch\n\nlaunch(sys.argv)\n",  # noqa: E501 - a file's text
            "python/sglang/srt/__init__.py": "",
            "python/sglang/srt/server.py": "from sglang.srt.server_args import ServerArgs\n\n\ndef launch(argv):\n    return ServerArgs()\n",  # noqa: E501 - a file's text
            "python/sglang/srt/server_args.py": SERVER_ARGS,
            "python/sglang/srt/layers/__init__.py": "",
            "python/sglang/multimodal_gen/__init__.py": "",
            "python/sglang/multimodal_gen/pipeline.py": "import torch\n",
            "sgl-kernel/csrc/allreduce/custom_all_reduce.cu": "// kernel\n",
            "docs/index.md": "# SGLang\n",
        },
    )
    (repo / "python/sglang/srt/layers/link.py").symlink_to("../server.py")
    v1 = bench.commit("v1", file="README.md")
    c2 = bench.commit(
        "server_args: a flag to turn custom all-reduce off",
        file="python/sglang/srt/server_args.py",
        content="    disable_custom_all_reduce: bool = False\n",
    )
    c3 = bench.commit(
        "multimodal_gen: a new pipeline step", file="python/sglang/multimodal_gen/pipeline.py", content="STEPS = 4\n"
    )
    c4 = bench.commit("docs: install", file="docs/index.md", content="pip install sglang\n")
    return repo, v1, c2, c3, c4


def test_read_code_judges_what_the_server_imports(sglang_repo, count_git_processes):
    repo, v1, c2, c3, c4 = sglang_repo
    calls = count_git_processes()
    facts = read_code(repo, [v1, c4], [c2, c3, c4], SGLANG)
    assert facts.problems == []
    assert set(facts.reach) == {v1, c4}
    for reach in facts.reach.values():
        assert reach.root == "python/" and reach.entries_found == ("sglang.launch_server",)
        assert reach.judge("python/sglang/srt/server_args.py") is True
        assert reach.judge("python/sglang/multimodal_gen/pipeline.py") is False
        assert reach.judge("sgl-kernel/csrc/allreduce/custom_all_reduce.cu") is None
        assert reach.judge("docs/index.md") is None
        assert "python/sglang/srt/layers/link.py" not in reach.modules  # a symlink is no module
    assert set(facts.reach[c4].reached) == {
        "python/sglang/__init__.py",
        "python/sglang/launch_server.py",
        "python/sglang/srt/__init__.py",
        "python/sglang/srt/server.py",
        "python/sglang/srt/server_args.py",
    }
    assert (
        ChangedLine("python/sglang/srt/server_args.py", True, "    disable_custom_all_reduce: bool = False")
        in facts.changes[c2]
    )
    assert facts.changes[c3] == (ChangedLine("python/sglang/multimodal_gen/pipeline.py", True, "STEPS = 4"),)
    assert [line.path for line in facts.changes[c4]] == ["docs/index.md"]
    # one shadow repository, one git log for all the commits; v1's files are not read again for c4
    commands = [next(a for a in call[1:] if not a.startswith("-") and "=" not in a) for call in calls]
    assert commands.count("init") == 1 and commands.count("log") == 1 and commands.count("ls-tree") == 2
    # the ids checked; the three rounds of the import walk of v1; c4: the one reached file that differs
    assert commands.count("cat-file") == 1 + 3 + 1


def test_tree_lists_regular_files_only_and_blobs_skip_big_and_missing_ones(bench):
    repo = bench.init()
    write(repo, {"a.py": "x = 1\n", "big.bin": "0" * 5000, "odd\nname.py": "y = 2\n"})
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link.py").symlink_to("a.py")
    sub = bench.init("sub")
    bench.commit("s", cwd=sub)
    bench.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendor/sub", cwd=repo)
    head = bench.commit("files", file="b.py", cwd=repo)
    with ObjectStore(repo / ".git") as store:
        files = store.tree(head)
        assert set(files) == {"a.py", "b.py", "big.bin", "odd\nname.py", "run.sh", ".gitmodules"}
        contents = store.blobs([files["a.py"], files["big.bin"], "0" * 40, head], max_bytes=1000)
        assert contents == {files["a.py"]: b"x = 1\n"}
        with pytest.raises(ObjectStoreError):
            store.blobs(["HEAD"])


def test_changed_lines_of_merges_binaries_deletions_and_caps(bench):
    repo = bench.init()
    root = bench.commit("root", file="a.txt", content="one\ntwo\n")
    (repo / "image.bin").write_bytes(b"\0\1\2")
    write(repo, {"space name.py": "-- a/not a header\n"})
    second = bench.commit("binary and a line that looks like a header", file="a.txt", content="three\n")
    bench.git("checkout", "-q", "-b", "side")
    side = bench.commit("side", file="side.txt", content="s\n")
    bench.git("checkout", "-q", "main")
    (repo / "a.txt").unlink()
    bench.commit("delete a.txt", file="b.txt", content="b\n")
    bench.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = bench.sha()
    with ObjectStore(repo / ".git") as store:
        changes = store.changed_lines([merge, second, root, side])
        assert list(changes) == [merge, second, root, side]
        assert changes[root] == (ChangedLine("a.txt", True, "one"), ChangedLine("a.txt", True, "two"))
        assert changes[second] == (
            ChangedLine("a.txt", True, "three"),
            ChangedLine("space name.py", True, "-- a/not a header"),
        )
        assert changes[merge] == (ChangedLine("side.txt", True, "s"),)  # against the first parent
        deleted = store.changed_lines([bench.sha("HEAD~1")])
        assert set(deleted[bench.sha("HEAD~1")]) == {
            ChangedLine("a.txt", False, line) for line in ("one", "two", "three")
        } | {ChangedLine("b.txt", True, "b")}
        assert store.cut == set()
        capped = store.changed_lines([root, second], max_lines=1)
        assert capped == {root: (ChangedLine("a.txt", True, "one"),), second: (ChangedLine("a.txt", True, "three"),)}
        assert store.cut == {root, second}
        with pytest.raises(ObjectStoreError):
            store.changed_lines(["1" * 40])


def test_read_code_on_bad_input_reports_problems(bench, tmp_path):
    facts = read_code(tmp_path / "nowhere", ["a" * 40], [], SGLANG)
    assert facts.reach == {} and len(facts.problems) == 1 and "no such file" in facts.problems[0]
    repo = bench.init()
    write(repo, {"tool/main.py": "import tool.x\n", "tool/x.py": "def (:\n"})
    head = bench.commit("no sglang here")
    blob = bench.git("rev-parse", "HEAD:tool/main.py")
    facts = read_code(repo, [head, "b" * 40, "HEAD~1"], ["c" * 40, blob], SGLANG)
    assert facts.reach[head].judge("tool/x.py") is None and facts.changes == {}
    assert facts.problems == [
        "'HEAD~1' is not a sha1 commit id; its code not read",
        "bbbbbbbbbbbb is not in the object store; its code not read",
        "cccccccccccc is not in the object store; its code not read",
        f"{blob[:12]} is a blob, not a commit; its code not read",
    ]
    assert not facts.reach[head].entries_found  # the builder says so, with its code (test_diagnostic_codes.py)
    assert read_code(repo, [head], [], ()) == CodeFacts()  # no server entry: nothing to judge
    facts = read_code(repo, [head], [], ("tool.main",))
    assert facts.problems == [
        f"1 file(s) of {head[:12]} could not be read or parsed (tool/x.py): their packages counted as imported"
    ]


def digest(root: Path) -> str:
    """Every path under ``root`` with its type, mode, size, mtime and content, hashed."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            h.update(f"{p}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
            if stat.S_ISREG(st.st_mode):
                h.update(Path(p).read_bytes())
    return h.hexdigest()


HOOKS = (
    "pre-commit",
    "post-commit",
    "post-checkout",
    "post-merge",
    "reference-transaction",
    "post-index-change",
    "fsmonitor-watchman",
    "pre-auto-gc",
)


def test_a_hostile_repository_runs_nothing_and_changes_nothing(sglang_repo, bench, tmp_path, monkeypatch):
    repo, v1, c2, c3, c4 = sglang_repo
    marker = tmp_path / "marker"
    script = tmp_path / "evil"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexit 0\n')
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for folder in (hooks, repo / ".git" / "hooks"):
        for name in HOOKS:
            (folder / name).write_text(f'#!/bin/sh\necho "hook {name}" >> "{marker}"\n')
            (folder / name).chmod(0o755)
    for key, value in {
        "core.fsmonitor": script,
        "core.hooksPath": hooks,
        "core.pager": script,
        "diff.external": script,
        "diff.x.textconv": script,
        "diff.x.command": script,
        "filter.x.smudge": script,
        "filter.x.clean": script,
        "filter.x.process": script,
        "filter.x.required": "true",
        "pager.log": script,
        "core.alternateRefsCommand": script,
        "gpg.program": script,
        "log.showSignature": "true",
    }.items():
        bench.git("config", key, str(value), cwd=repo)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=x diff=x\n")
    write(repo, {".gitattributes": "* filter=x diff=x\n"})
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(script))
    monkeypatch.setenv("GIT_PAGER", str(script))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{script}'")

    before = digest(repo)
    facts = read_code(repo, [v1, c4], [c2, c3], SGLANG)
    with ObjectStore(repo / ".git") as store:
        files = store.tree(c4)
        assert store.blobs([files["python/sglang/srt/server_args.py"]])
        assert store.changed_lines([c2])[c2]
    assert not marker.exists(), marker.read_text()
    assert digest(repo) == before
    assert facts.problems == [] and facts.reach[c4].judge("python/sglang/multimodal_gen/pipeline.py") is False
    assert (
        ChangedLine("python/sglang/srt/server_args.py", True, "    disable_custom_all_reduce: bool = False")
        in facts.changes[c2]
    )

    # the traps were armed: git itself in the repository runs them
    monkeypatch.undo()
    bench.git("--no-pager", "log", "-p", "-1", c2, cwd=repo, check=False)
    assert marker.exists()


# --------------------------------------------------------------------------- the cache of Reach


def git_commands(calls: list[list[str]]) -> list[str]:
    return [next(a for a in call[1:] if not a.startswith("-") and "=" not in a) for call in calls]


def reach_entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.reach")) if folder.is_dir() else []


def test_a_cached_reach_is_used_for_the_same_commit_and_entries_only(sglang_repo, tmp_path, count_git_processes):
    repo, v1, c2, c3, c4 = sglang_repo
    cache = ParseCache(tmp_path / "cache")
    fresh = read_code(repo, [v1, c4], [c2], SGLANG)
    assert read_code(repo, [v1, c4], [c2], SGLANG, cache=cache) == fresh
    assert len(reach_entries(tmp_path / "cache")) == 2
    calls = count_git_processes()
    assert read_code(repo, [v1, c4], [c2], SGLANG, cache=cache) == fresh
    # a hit: no tree listed, no file read (the one cat-file checks the ids)
    assert "ls-tree" not in git_commands(calls) and git_commands(calls).count("cat-file") == 1
    calls.clear()
    read_code(repo, [c3], [], SGLANG, cache=cache)  # another commit: a miss
    read_code(repo, [v1], [], ("sglang.srt.server",), cache=cache)  # other entries: a miss
    assert git_commands(calls).count("ls-tree") == 2 and len(reach_entries(tmp_path / "cache")) == 4


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "other key", "not a reach", "inconsistent"])
def test_a_corrupt_or_foreign_entry_is_ignored_and_written_anew(sglang_repo, tmp_path, damage, count_git_processes):
    repo, v1, *_ = sglang_repo
    cache = ParseCache(tmp_path / "cache")
    fresh = read_code(repo, [v1], [], SGLANG, cache=cache)
    (entry,) = reach_entries(tmp_path / "cache")
    magic, key, body = entry.read_bytes().split(b"\n", 2)
    head = magic + b"\n" + key + b"\n"
    entry.write_bytes(
        {
            "garbage": os.urandom(len(body)),
            "empty": b"",
            "truncated": head + body[: len(body) // 2],
            "other key": REACH_MAGIC + b'["reach", "another"]\n' + body,
            "not a reach": head + b'{"root": 1}',
            "inconsistent": head + body.replace(b'"modules":[', b'"modules":["elsewhere/x.py",'),
        }[damage]
    )
    if damage == "inconsistent":
        assert b"elsewhere/x.py" in entry.read_bytes()
    calls = count_git_processes()
    assert read_code(repo, [v1], [], SGLANG, cache=cache) == fresh
    assert "ls-tree" in git_commands(calls)  # read again from git
    calls.clear()
    assert read_code(repo, [v1], [], SGLANG, cache=cache) == fresh
    assert "ls-tree" not in git_commands(calls)  # the entry was written anew


def test_a_reach_missing_a_file_is_not_kept_one_with_a_file_that_does_not_parse_is(bench, tmp_path):
    repo = bench.init()
    write(
        repo,
        {
            "tool/__init__.py": "",
            "tool/main.py": "import tool.x\nimport tool.y\n",
            "tool/x.py": "def (:\n",
            "tool/y.py": "BIG = '" + "y" * 500 + "'\n",
        },
    )
    head = bench.commit("tool")
    cache = ParseCache(tmp_path / "cache")
    too_small = read_code(repo, [head], [], ("tool.main",), max_blob_bytes=100, cache=cache)
    assert too_small.reach[head].unknown == {"tool/x.py", "tool/y.py"}
    assert reach_entries(tmp_path / "cache") == []  # y.py may be read another time
    fresh = read_code(repo, [head], [], ("tool.main",), cache=cache)
    assert fresh.reach[head].unknown == {"tool/x.py"} and len(reach_entries(tmp_path / "cache")) == 1
    again = read_code(repo, [head], [], ("tool.main",), cache=cache)
    assert again == fresh and len(again.problems) == 1  # the problem told on a hit too


def test_the_cache_writes_nothing_in_the_repository(sglang_repo, tmp_path):
    repo, v1, c2, c3, c4 = sglang_repo
    before = digest(repo)
    outside = ParseCache(tmp_path / "cache")
    read_code(repo, [v1, c4], [c2], SGLANG, cache=outside)
    assert len(reach_entries(tmp_path / "cache")) == 2 and len(parse_tables(tmp_path / "cache")) == 2
    for inside in (repo / ".cache" / "timeline", repo / ".git" / "timeline"):
        facts = read_code(repo, [v1, c4], [c2], SGLANG, cache=ParseCache(inside))
        assert facts == read_code(repo, [v1, c4], [c2], SGLANG)
    assert digest(repo) == before


def test_no_cache_reads_and_writes_nothing(sglang_repo, parse_cache_folder, monkeypatch):
    repo, v1, c2, *_ = sglang_repo
    for method in ("load_reach", "load_parses", "store_parses"):
        monkeypatch.setattr(ParseCache, method, lambda *a, method=method: pytest.fail(f"cache {method}"))
    monkeypatch.setattr(ObjectStore, "ancestors", lambda *a: pytest.fail("parse tables looked for"))
    read_code(repo, [v1, c2], [], SGLANG)
    assert not parse_cache_folder.exists()


# --------------------------------------------------------------------------- the parse tables


def parse_tables(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parses")) if folder.is_dir() else []


@pytest.fixture
def parsed(monkeypatch) -> list[tuple[str, bytes]]:
    """Every (package, source) that ``read_code`` parses from then on (with ``jobs=1``: here)."""
    seen: list[tuple[str, bytes]] = []
    real = code.references_of

    def counting(modules):
        seen.extend(modules)
        return real(modules)

    monkeypatch.setattr(code, "references_of", counting)
    return seen


def test_a_new_commit_parses_only_the_blobs_its_ancestor_did_not_have(sglang_repo, tmp_path, parsed):
    repo, v1, c2, c3, c4 = sglang_repo
    cache = ParseCache(tmp_path / "cache")
    read_code(repo, [v1], [], SGLANG, cache=cache, jobs=1)
    assert len(parsed) == 5 and len(parse_tables(tmp_path / "cache")) == 1  # the 5 files reached
    parsed.clear()
    facts = read_code(repo, [c2], [], SGLANG, cache=cache, jobs=1)  # a child, its Reach not cached
    assert parsed == [("sglang.srt", (SERVER_ARGS + "    disable_custom_all_reduce: bool = False\n").encode())]
    parsed.clear()
    read_code(repo, [c4], [], SGLANG, cache=cache, jobs=1)  # c3 has no table: c2's is used
    assert parsed == [] and len(parse_tables(tmp_path / "cache")) == 3
    assert facts == read_code(repo, [c2], [], SGLANG)


APP = {
    "app/__init__.py": "",
    "app/main.py": "from app.a import x\nimport app.b.helper\n",
    "app/a/__init__.py": "",
    "app/a/x.py": "from . import util\n",
    "app/a/util.py": "",
    "app/b/__init__.py": "",
    "app/b/helper.py": "VALUE = 1\n",
    "app/b/util.py": "",
    "app/c/__init__.py": "",
    "app/c/extra.py": "",
}


@pytest.mark.parametrize(
    "change",
    [
        # the same blob in another package: its relative import names another module
        {"app/a/x.py": None, "app/b/x.py": "from . import util\n", "app/main.py": "from app.b import x\n"},
        {"app/b/helper.py": "def (:\n"},  # does not parse any more
        {"app/b/helper.py": "VALUE = 1\nimport app.c.extra\n"},  # an import added
        {"app/main.py": "from app.a import x\n"},  # an import removed
        {"app/b/helper.py": "REGISTRY = 'app.c'\n"},  # a package named in a string
        {"app/a/util.py": None, "app/a/__init__.py": "from .x import *\n"},  # a file gone
        {"docs/index.md": "# App\n"},  # nothing the server imports
    ],
    ids=["moved", "unparsable", "import added", "import removed", "named", "deleted", "docs"],
)
def test_a_commit_read_with_the_parse_tables_is_read_as_without_them(bench, tmp_path, parsed, change):
    repo = bench.init()
    write(repo, APP)
    before = bench.commit("app")
    cache = ParseCache(tmp_path / "cache")
    read_code(repo, [before], [], ("app.main",), cache=cache, jobs=1)
    seen = set(parsed)
    for path, text in change.items():
        if text is None:
            (repo / path).unlink()
        else:
            write(repo, {path: text})
    after = bench.commit("change")
    parsed.clear()
    facts = read_code(repo, [after], [], ("app.main",), cache=cache, jobs=1)
    assert not seen & set(parsed)  # nothing parsed again
    assert facts == read_code(repo, [after], [], ("app.main",))


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "other key", "not a table", "not references"])
def test_a_corrupt_or_foreign_parse_table_is_not_used(sglang_repo, tmp_path, damage, parsed):
    repo, v1, c2, *_ = sglang_repo
    cache = ParseCache(tmp_path / "cache")
    read_code(repo, [v1], [], SGLANG, cache=cache, jobs=1)
    (entry,) = parse_tables(tmp_path / "cache")
    magic, key, body = entry.read_bytes().split(b"\n", 2)
    head = magic + b"\n" + key + b"\n"
    assert magic + b"\n" == PARSES_MAGIC and b"false" in body
    entry.write_bytes(
        {
            "garbage": os.urandom(len(body)),
            "empty": b"",
            "truncated": head + body[: len(body) // 2],
            "other key": PARSES_MAGIC + b'["parses", "another"]\n' + body,
            "not a table": head + b'{"not a blob id": {}}',
            "not references": head + body.replace(b"false", b'"no"', 1),
        }[damage]
    )
    parsed.clear()
    assert read_code(repo, [c2], [], SGLANG, cache=cache, jobs=1) == read_code(repo, [c2], [], SGLANG, jobs=1)
    assert len(parsed) == 2 * 5  # every file parsed, by both reads


def test_parse_tables_are_pruned_with_the_other_entries(sglang_repo, tmp_path):
    repo, v1, c2, c3, c4 = sglang_repo
    cache = ParseCache(tmp_path / "cache", max_entries=3)
    read_code(repo, [v1], [], SGLANG, cache=cache)
    read_code(repo, [c2, c4], [], SGLANG, cache=cache)  # 6 entries written, pruned down to 2
    assert len(reach_entries(tmp_path / "cache")) + len(parse_tables(tmp_path / "cache")) <= 3
    assert len(parse_tables(tmp_path / "cache")) >= 1


# --------------------------------------------------------------------------- parsing in processes


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_pool_gives_what_one_process_gives(sglang_repo, monkeypatch):
    from concurrent.futures import ProcessPoolExecutor

    repo, v1, c2, c3, c4 = sglang_repo
    serial = read_code(repo, [v1, c4], [c2], SGLANG, jobs=1)
    pieces = []
    submit = ProcessPoolExecutor.submit

    def counting_submit(self, fn, piece):
        pieces.append(piece)
        return submit(self, fn, piece)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", counting_submit)
    monkeypatch.setattr(code, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(code, "_PIECE_BYTES", 1)  # about a file a piece: every worker busy
    assert read_code(repo, [v1, c4], [c2], SGLANG, jobs=2) == serial
    assert len(pieces) >= 3 and all(pieces)


def test_workers_that_cannot_start_leave_the_parsing_here(sglang_repo, monkeypatch):
    import multiprocessing

    repo, v1, *_ = sglang_repo
    serial = read_code(repo, [v1], [], SGLANG, jobs=1)
    monkeypatch.setattr(code, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(multiprocessing, "get_context", lambda method: (_ for _ in ()).throw(OSError("no fork")))
    assert read_code(repo, [v1], [], SGLANG, jobs=2) == serial


@given(st.lists(st.binary(max_size=40), max_size=30), st.integers(1, 100))
def test_pieces_keep_every_module_in_order(sources, size):
    modules = [(f"pkg{i}", source) for i, source in enumerate(sources)]
    pieces = code._pieces(modules, size)
    assert [m for piece in pieces for m in piece] == modules and all(pieces)
