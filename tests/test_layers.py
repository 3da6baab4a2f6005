"""The layers, enforced: data flows one way, sources -> records -> timeline -> outputs.

An import-linter-style contract checked on the source: every import of every module (at the top
or inside a function) is read with ``ast`` and held against the rules below. import-linter itself
cannot see ``timeline.parsers``, which setuptools maps from the repository's top-level
``parsers/`` folder.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ("timeline.render", "timeline.export", "timeline.frames", "timeline.parquet")
COMMAND_LINE = ("timeline.cli", "timeline.commands")
ANALYSIS = (
    "timeline.shifts",
    "timeline.suspects",
    "timeline.detect",
    "timeline.imports",
    "timeline.correlate",
    "timeline.bisection",
    "timeline.clock",
    "timeline.workload",
)
# The outputs that flatten runs, events and shifts into plain values (timeline.render.plain).
FLATTENING_OUTPUTS = ("timeline.render.csv", "timeline.export", "timeline.frames")
FAMILIES = ("timeline.parsers.sglang", "timeline.parsers.vllm", "timeline.parsers.bench")
# Leaves (they import nothing of timeline) any layer may use: the one place untrusted text is made
# visible, which the model's own views (repr, the notebook table) use as every output does; and the
# cycle collector held off while the reflog and store readings make millions of kept objects.
SHARED_LEAVES = ("timeline.render.safe", "timeline.collector")

# (what the rule says, the modules it binds, the modules they must not import)
CONTRACTS = [
    (
        "the model is read by the outputs and imports none of them",
        ("timeline.model",),
        ("timeline.git", "timeline.builder", "timeline.cache", *ANALYSIS, *OUTPUTS, *COMMAND_LINE),
    ),
    (
        "records are the bottom: they import nothing of timeline but each other",
        ("timeline.records", "timeline.columns"),
        (
            "timeline.parsers",
            "timeline.git",
            "timeline.model",
            "timeline.builder",
            "timeline.cache",
            *ANALYSIS,
            *OUTPUTS,
            *COMMAND_LINE,
        ),
    ),
    (
        "parsers read text into records and know nothing else",
        ("timeline.parsers",),
        ("timeline.git", "timeline.model", "timeline.builder", "timeline.cache", *ANALYSIS, *OUTPUTS, *COMMAND_LINE),
    ),
    (
        "the log families never import each other (the block reader is SGLang's)",
        ("timeline.parsers.vllm",),
        ("timeline.parsers.sglang", "timeline.parsers.bench"),
    ),
    (
        "the log families never import each other (the block reader is SGLang's)",
        ("timeline.parsers.bench",),
        ("timeline.parsers.sglang", "timeline.parsers.vllm"),
    ),
    (
        "the log families never import each other (the block reader is SGLang's)",
        ("timeline.parsers.sglang",),
        ("timeline.parsers.vllm", "timeline.parsers.bench"),
    ),
    (
        "git reads the checkout into records, never analysis or outputs",
        ("timeline.git",),
        (
            "timeline.shifts",
            "timeline.suspects",
            "timeline.detect",
            "timeline.correlate",
            "timeline.bisection",
            "timeline.builder",
            *OUTPUTS,
            *COMMAND_LINE,
        ),
    ),
    (
        "analysis is pure: no git, no cache, no outputs, no command line",
        ANALYSIS,
        ("timeline.git", "timeline.builder", "timeline.cache", *OUTPUTS, *COMMAND_LINE),
    ),
    (
        "the loader reads a JSON document into the model, nothing else",
        ("timeline.loader",),
        ("timeline.git", "timeline.builder", "timeline.cache", *ANALYSIS, *OUTPUTS, *COMMAND_LINE),
    ),
    (
        "the store keeps the typed model: it never runs git, a build or the command line",
        ("timeline.store",),
        ("timeline.git", "timeline.builder", "timeline.cache", *COMMAND_LINE),
    ),
    (
        "the model, the sources, analysis and build never import the store (the outputs may word its results)",
        (
            "timeline.model",
            "timeline.records",
            "timeline.parsers",
            "timeline.git",
            "timeline.builder",
            "timeline.loader",
            *ANALYSIS,
        ),
        ("timeline.store",),
    ),
    (
        "outputs read the model, never git or the command line",
        OUTPUTS,
        ("timeline.git", "timeline.builder", *COMMAND_LINE),
    ),
    *(
        (
            "the CSV, the JSON and the frames share timeline.render.plain, never each other",
            (output,),
            tuple(other for other in FLATTENING_OUTPUTS if other != output),
        )
        for output in FLATTENING_OUTPUTS
    ),
]


def module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[0] == "parsers":  # shipped as timeline.parsers (pyproject.toml, package-dir)
        parts.insert(0, "timeline")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str) -> set[str]:
    """Every module ``path`` imports, absolute, wherever the import stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


MODULES = {module_name(path): path for folder in ("timeline", "parsers") for path in (ROOT / folder).rglob("*.py")}


def within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("rule, bound, forbidden", CONTRACTS, ids=[f"{c[0]}: {c[1][0]}" for c in CONTRACTS])
def test_contract(rule, bound, forbidden):
    broken = sorted(
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if within(name, bound)
        for target in imports_of(path, name)
        if within(target, forbidden) and not within(target, bound) and not within(target, SHARED_LEAVES)
    )
    assert not broken, f"{rule}:\n" + "\n".join(broken)


def test_the_shared_leaves_import_nothing_of_timeline():
    for leaf in SHARED_LEAVES:
        assert not [target for target in imports_of(MODULES[leaf], leaf) if within(target, ("timeline",))], leaf


def test_the_contracts_see_every_module():
    assert {
        "timeline.parsers.sglang",
        "timeline.git.objects",
        "timeline.suspects",
        "timeline.render.wording",
        "timeline.cli",
        "timeline.store.writing",
    } <= set(MODULES)
    assert imports_of(MODULES["timeline.parsers.sglang_fast"], "timeline.parsers.sglang_fast") & {
        "timeline.parsers.sglang",
        "timeline.records",
    }
