"""timeline.imports: which files a server can import, over trees built from dicts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.imports import DEFAULT_ENTRIES, Reach, reachable


def reach_of(files: dict[str, str], entries=("app.main",), asked: list | None = None) -> Reach:
    def read(paths):
        if asked is not None:
            asked.append(sorted(paths))
        return {p: files[p].encode() for p in paths}

    return reachable(files, read, entries)


def reached(files: dict[str, str], entries=("app.main",)) -> set[str]:
    return set(reach_of(files, entries).reached)


BASE = {
    "app/__init__.py": "",
    "app/main.py": "",
    "app/core/__init__.py": "",
    "app/core/engine.py": "",
    "app/core/sched.py": "",
    "app/models/__init__.py": "",
    "app/models/llama.py": "",
    "app/models/qwen.py": "",
    "app/extra/__init__.py": "",
    "app/extra/tool.py": "",
}


def tree(**sources: str) -> dict[str, str]:
    """BASE with some files' sources given: ``core_engine="..."`` sets app/core/engine.py,
    ``core_init`` app/core/__init__.py."""
    files = dict(BASE)
    for key, text in sources.items():
        folder, _, name = key.rpartition("_") if key != "main" else ("", "", key)
        path = "/".join(["app", *([folder] if folder else []), "__init__" if name == "init" else name])
        files[path + ".py"] = text
    return files


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import app.core.engine", {"app/core/__init__.py", "app/core/engine.py"}),
        ("from app.core import engine", {"app/core/__init__.py", "app/core/engine.py"}),
        ("from app.core.engine import Engine", {"app/core/__init__.py", "app/core/engine.py"}),
        ("from app.core import Engine", {"app/core/__init__.py"}),  # an attribute, no submodule
        ("from .core import engine", {"app/core/__init__.py", "app/core/engine.py"}),
        ("from . import extra", {"app/extra/__init__.py"}),
        (
            "def serve():\n    try:\n        import app.core.sched\n    except ImportError:\n        pass",
            {"app/core/__init__.py", "app/core/sched.py"},
        ),
        (
            "import importlib\nm = importlib.import_module('app.extra.tool')",
            {"app/extra/__init__.py", "app/extra/tool.py"},
        ),
        ("m = __import__('app.core.sched')", {"app/core/__init__.py", "app/core/sched.py"}),
        (
            "import importlib\nimportlib.import_module('.extra.tool', __package__)",
            {"app/extra/__init__.py", "app/extra/tool.py"},
        ),
        (
            "from importlib import import_module\nimport_module(f'app.models.{name}')",
            {"app/models/__init__.py", "app/models/llama.py", "app/models/qwen.py"},
        ),
        (
            "import importlib\nimportlib.import_module('app.models.' + name)",
            {"app/models/__init__.py", "app/models/llama.py", "app/models/qwen.py"},
        ),
        (
            "import importlib\nimportlib.import_module('.' + name, __package__)",
            set(BASE) - {"app/__init__.py", "app/main.py"},
        ),
        (
            "ModelRegistry.register('app.models')",
            {"app/models/__init__.py", "app/models/llama.py", "app/models/qwen.py"},
        ),
        ("WORKER = 'app.core.engine.Engine'", {"app/core/__init__.py", "app/core/engine.py"}),
        ("WORKER = 'app.core.engine:Engine'", {"app/core/__init__.py", "app/core/engine.py"}),
        ("LAZY = {'Engine': '.core.engine:Engine'}", {"app/core/__init__.py", "app/core/engine.py"}),
        ("logger = logging.getLogger('app')", set()),  # a top-level name: only its __init__
        ("import torch.nn\nfrom numpy import *", set()),  # outside the tree
        ("'''app.models is documented here.'''", set()),
        ("import importlib\nimportlib.import_module(name)", set()),  # no constant part: not seen
    ],
)
def test_imports_of_the_entry(source, expected):
    assert reached(tree(main=source)) == {"app/__init__.py", "app/main.py"} | expected


def test_relative_imports_of_levels_one_and_two():
    files = tree(main="import app.core.engine", core_engine="from . import sched\nfrom ..models import llama")
    assert reached(files) == {
        "app/__init__.py",
        "app/main.py",
        "app/core/__init__.py",
        "app/core/engine.py",
        "app/core/sched.py",
        "app/models/__init__.py",
        "app/models/llama.py",
    }


def test_a_relative_import_in_a_package_init_resolves_against_the_package_itself():
    files = tree(main="import app.core", core_init="from .sched import S")
    assert reached(files) == {"app/__init__.py", "app/main.py", "app/core/__init__.py", "app/core/sched.py"}


def test_a_relative_import_above_the_top_package_is_ignored():
    assert reached(tree(main="from ... import x")) == {"app/__init__.py", "app/main.py"}


def test_a_package_scanned_with_pkgutil_is_reached_whole():
    files = tree(main="import app.models", models_init="import pkgutil\nfor m in pkgutil.iter_modules(__path__): pass")
    assert reached(files) >= {"app/models/llama.py", "app/models/qwen.py"}


def test_an_entry_naming_a_package_reaches_all_of_it():
    assert reached(BASE, ("app.models",)) == {
        "app/__init__.py",
        "app/models/__init__.py",
        "app/models/llama.py",
        "app/models/qwen.py",
    }


def test_a_file_that_does_not_parse_counts_as_importing_its_whole_package():
    files = tree(main="import app.core.engine", core_engine="def broken(:\n")
    reach = reach_of(files)
    assert set(reach.reached) == {
        "app/__init__.py",
        "app/main.py",
        "app/core/__init__.py",
        "app/core/engine.py",
        "app/core/sched.py",
    }
    assert reach.unknown == {"app/core/engine.py"}
    assert reach.judge("app/extra/tool.py") is False


def test_a_file_the_reader_leaves_out_counts_as_unreadable():
    files = tree(main="import app.core.engine")
    reach = reachable(
        files, lambda paths: {p: files[p].encode() for p in paths if p != "app/core/engine.py"}, ["app.main"]
    )
    assert reach.unknown == {"app/core/engine.py"} and reach.judge("app/core/sched.py") is True


def test_with_ids_a_file_whose_references_the_memo_holds_is_not_read_again():
    files = tree(main="import app.core.engine", core_engine="import app.core.sched")
    ids = {path: f"id of {text!r}" for path, text in files.items()}  # equal contents, one id
    memo: dict = {}
    first: list = []
    reach = reach_of_ids(files, ids, memo, first)
    changed = dict(files, **{"app/core/sched.py": "import app.models"})
    changed_ids = dict(ids, **{"app/core/sched.py": "id of the new sched"})
    again: list = []
    assert reach_of_ids(changed, changed_ids, memo, again) == reach_of(changed)
    # only the new sched.py, and the package it now imports (new to the memo), are read
    assert again == [[], [], ["app/core/sched.py"], ["app/models/__init__.py"]] and reach == reach_of(files)
    assert ("app.core", "id of 'import app.core.sched'") in memo


def reach_of_ids(files: dict[str, str], ids: dict[str, str], memo: dict, asked: list) -> Reach:
    def read(paths):
        asked.append(sorted(paths))
        return {p: files[p].encode() for p in paths}

    return reachable(files, read, ("app.main",), memo, ids=ids)


def test_null_bytes_and_deep_nesting_count_as_not_parsed():
    files = tree(main="import app.core.engine\nx = 1\0", core_engine="x = " + "(" * 5000 + ")" * 5000)
    reach = reach_of(files)
    assert reach.unknown == {"app/main.py", "app/core/engine.py"} and set(reach.reached) == set(files)


def test_only_the_files_reached_are_read_a_round_at_a_time():
    asked: list = []
    reach_of(tree(main="import app.core.engine", core_engine="import app.core.sched"), asked=asked)
    assert asked == [
        ["app/__init__.py", "app/main.py"],
        ["app/core/__init__.py", "app/core/engine.py"],
        ["app/core/sched.py"],
    ]


SGLANG = {
    "python/sglang/__init__.py": "",
    "python/sglang/launch_server.py": "from sglang.srt.server import launch\n",
    "python/sglang/srt/__init__.py": "",
    "python/sglang/srt/server.py": "from sglang.srt.layers import moe\n",
    "python/sglang/srt/layers/__init__.py": "",
    "python/sglang/srt/layers/moe.py": "",
    "python/sglang/srt/layers/norm.py": "",
    "python/sglang/srt/layers/configs/E=8,N=14336.json": "{}",
    "python/sglang/srt/layers/moe_kernels.cu": "",
    "python/sglang/multimodal_gen/__init__.py": "",
    "python/sglang/multimodal_gen/pipeline.py": "",
    "python/sglang/multimodal_gen/configs/wan.json": "{}",
    "python/setup_helper.py": "",
    "python/pyproject.toml": "",
    "sgl-kernel/csrc/allreduce/custom_all_reduce.cu": "",
    "sgl-kernel/python/sgl_kernel/__init__.py": "",
    "docs/index.md": "",
    "Dockerfile": "",
    "test/srt/test_moe.py": "",
}


@pytest.mark.parametrize(
    "path, judged",
    [
        ("python/sglang/launch_server.py", True),
        ("python/sglang/srt/layers/moe.py", True),
        ("python/sglang/srt/layers/configs/E=8,N=14336.json", True),  # data next to reached modules
        ("python/sglang/srt/layers/moe_kernels.cu", True),
        ("python/sglang/srt/layers/norm.py", False),  # its folder is reached, it is not
        ("python/sglang/multimodal_gen/pipeline.py", False),
        ("python/sglang/multimodal_gen/configs/wan.json", None),  # not Python, in no reached folder
        ("python/sglang/multimodal_gen/jit/rope.cu", None),  # may be loaded by its path
        ("python/sglang/multimodal_gen/removed.py", False),  # a file this version lacks
        ("python/sglang/srt/layers/removed.py", True),
        ("python/setup_helper.py", None),  # in the root, in no package
        ("python/pyproject.toml", None),
        ("sgl-kernel/csrc/allreduce/custom_all_reduce.cu", None),
        ("sgl-kernel/python/sgl_kernel/__init__.py", None),
        ("docs/index.md", None),
        ("Dockerfile", None),
        ("test/srt/test_moe.py", None),
    ],
)
def test_judge_in_an_sglang_like_tree(path, judged):
    reach = reach_of(SGLANG, DEFAULT_ENTRIES["sglang-server"])
    assert reach.root == "python/" and reach.entries_found == ("sglang.launch_server",)
    assert reach.judge(path) is judged


def test_a_package_named_by_the_constant_start_of_a_computed_name_is_reached_whole():
    """vLLM's registry builds the module name long before it imports it:
    https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/models/registry.py"""
    files = {
        "app/__init__.py": "",
        "app/main.py": "from app import registry\n",
        "app/registry.py": (
            "import importlib\n"
            "def load(mod_relname):\n"
            '    module_name = f"app.models.{mod_relname}"\n'
            "    return importlib.import_module(module_name)\n"
            "OTHER = 'app.plugins.' + 'x'\n"
        ),
        "app/models/__init__.py": "",
        "app/models/llama.py": "",
        "app/plugins/__init__.py": "",
        "app/plugins/x.py": "",
        "app/unused/__init__.py": "",
        "app/unused/y.py": "",
    }
    assert {"app/models/llama.py", "app/plugins/x.py"} <= reached(files)
    assert "app/unused/y.py" not in reached(files)


def test_the_shallowest_copy_of_the_entry_gives_the_root():
    files = {**SGLANG, "3rdparty/vendored/python/sglang/launch_server.py": ""}
    assert reach_of(files, ("sglang.launch_server",)).root == "python/"


def test_no_entry_found_judges_nothing():
    reach = reach_of(SGLANG, ("vllm.entrypoints",))
    assert reach.root is None and reach.entries_found == () and reach.reached == frozenset()
    assert reach.judge("python/sglang/multimodal_gen/pipeline.py") is None


def test_a_vllm_like_tree_at_the_top_of_the_repository():
    files = {
        "vllm/__init__.py": "",
        "vllm/entrypoints/__init__.py": "",
        "vllm/entrypoints/openai/__init__.py": "",
        "vllm/entrypoints/openai/api_server.py": "from vllm.engine import llm_engine\n",
        "vllm/engine/__init__.py": "",
        "vllm/engine/llm_engine.py": "",
        "vllm/engine/unused.py": "",
        "setup.py": "",
        "csrc/attention.cu": "",
    }
    reach = reach_of(files, DEFAULT_ENTRIES["vllm-server"])
    assert reach.root == "" and "vllm/entrypoints/openai/api_server.py" in reach.reached
    assert [
        reach.judge(p) for p in ("vllm/engine/llm_engine.py", "vllm/engine/unused.py", "setup.py", "csrc/attention.cu")
    ] == [True, False, None, None]


# --------------------------------------------------------------------------- a model of the walk

NAMES = [f"pkg{i}.mod{j}" for i in range(3) for j in range(4)]


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES), max_size=3)),
    st.sampled_from(NAMES),
    st.booleans(),
)
def test_the_walk_is_the_closure_of_the_import_graph(graph, entry, relative):
    files = {f"src/pkg{i}/__init__.py": "" for i in range(3)}
    for name in NAMES:
        package, module = name.split(".")
        lines = []
        for target in graph.get(name, []):
            target_package, target_module = target.split(".")
            if relative and target_package == package:
                lines.append(f"from . import {target_module}")
            else:
                lines.append(f"import {target}")
        files[f"src/{package}/{module}.py"] = "\n".join(lines)
    # the closure, as Python would run it
    seen, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, []))
    expected = {f"src/{n.replace('.', '/')}.py" for n in seen} | {f"src/{n.split('.')[0]}/__init__.py" for n in seen}
    reach = reach_of(files, (entry,))
    assert set(reach.reached) == expected
    for path in files:
        assert reach.judge(path) is (path in expected)
