"""How fast ``read_code`` finds what a server can import on an SGLang-sized tree.

Run (from the repository root, in the project's virtualenv)::

    python benchmarks/code_speed.py          # best of 5
    python benchmarks/code_speed.py 3        # best of 3

It builds once, in a temporary folder, with one ``git fast-import``, a repository shaped like
SGLang's ``python/`` tree (https://github.com/sgl-project/sglang): ``python/sglang/launch_server.py``
as the entry, a layered ``srt`` package (each module importing about ten others of the tree, a
few of them inside functions or ``try`` blocks, a model registry loading ``sglang.srt.models`` by
name), test and benchmark scripts nothing imports, and a ``multimodal_gen`` package the server
never imports; module sizes drawn from a log-normal law (a few of 100-200 KB, as SGLang's
``server_args.py`` and ``scheduler.py``). Then it times, best of N rounds (each round runs every
step once, so a change of load hits them all alike):

- ``baseline``: ``git cat-file --batch`` of every ``.py`` blob of the tree, read to the end
  (the I/O floor: every file the walk could read, and no parsing);
- ``cold, 1 process``: ``read_code`` with no cache, parsing in this process;
- ``cold``: ``read_code`` with no cache, as ``timeline build --no-cache`` runs it (the
  parsing shared among worker processes when a round of the walk has many files);
- ``warm``: ``read_code`` with the cache holding this commit's entry;
- ``a new commit 10 files apart, no blob cache``: the versions before and after a pull that
  changed 10 of the files the server imports, the ``Reach`` of the one before cached, of the
  one after not, and no parse table (what every new commit cost before the parse tables);
- ``a new commit 10 files apart, blob cache warm``: the same, with the parse tables the reads of
  the versions before left: only the 10 new blobs are parsed.

Measured on 2 cores (``nproc``: 2; /proc/cpuinfo: "AMD EPYC"), Python 3.11.7, a shared machine
(load average 1.3), best of 7; 1,517 modules, 15.5 MB, 1,056 of them reached (11.0 MB) in 8
rounds of the walk::

    baseline           0.094 s     1.0x baseline
    cold, 1 process    2.303 s    24.4x baseline
    cold               1.679 s    17.8x baseline
    warm               0.015 s     0.2x baseline

Two worker processes take the cold read from 2.3 s to 1.7 s (other runs: 2.2 s to 1.5 s; the
parsing alone, 10.6 MB: 1.94 s to 1.05 s); the warm read is the shadow repository, the commit
ids checked, one entry read per version and the suspect's changed lines.

The new-commit rows, same machine, busier (load average 1.5 to 2.4), best of 7::

    baseline                                       0.111 s     1.0x baseline
    a new commit 10 files apart, no blob cache     2.394 s    21.6x baseline
    a new commit 10 files apart, blob cache warm   0.143 s     1.3x baseline

(Four runs: 0.122 to 0.143 s with the blob cache warm, 1.56 to 2.39 s without, as the load
moved.) With the parse table of the version before (826 KB, one file), the new version parses
its 10 new blobs and walks the graph in Python; the rest is ``git ls-tree``, ``git rev-list``
and reading and writing one table. One file a blob instead would have cost 0.2 s to write
(1,056 atomic writes, measured here) and used up the cache's 20,000 entries in 19 versions.

This is a benchmark, not a test: nothing here fails (but cold and warm giving different
answers stops it).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timeline.cache import ParseCache  # noqa: E402
from timeline.git.code import read_code  # noqa: E402
from timeline.scenario import run_fast_import  # noqa: E402

ENTRIES = ("sglang.launch_server",)

WORDS = (
    "batch",
    "token",
    "cache",
    "layer",
    "weight",
    "scale",
    "rank",
    "stream",
    "req",
    "seq",
    "head",
    "expert",
    "block",
    "page",
    "prefix",
    "logits",
    "hidden",
    "state",
    "config",
    "spec",
    "draft",
    "tree",
    "kv",
    "attn",
    "mlp",
    "norm",
    "rope",
    "lora",
    "quant",
    "group",
)
TYPES = (
    "torch.Tensor",
    "int",
    "float",
    "Optional[torch.Tensor]",
    "List[int]",
    "bool",
    "str",
    "Dict[str, Any]",
    "Tuple[int, int]",
)
OUTSIDE = (
    "import os",
    "import logging",
    "import math",
    "import torch",
    "import torch.nn as nn",
    "import numpy as np",
    "from typing import Any, Dict, List, Optional, Tuple",
    "from dataclasses import dataclass, field",
    "import triton",
    "import triton.language as tl",
    "from enum import Enum, auto",
    "import time",
    "import threading",
    "import dataclasses",
)
SRT_PACKAGES = (
    "layers",
    "layers.attention",
    "layers.moe",
    "layers.quantization",
    "models",
    "managers",
    "mem_cache",
    "model_executor",
    "model_loader",
    "distributed",
    "entrypoints",
    "utils",
    "lora",
    "speculative",
    "configs",
    "sampling",
    "constrained",
    "function_call",
    "disaggregation",
    "eplb",
    "metrics",
    "multimodal",
    "connector",
    "compilation",
)


def name(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts))


def function(rng: random.Random, method: bool) -> str:
    """One function in the style of a model or scheduler module: a docstring, branches, loops,
    tensor calls, comments."""
    args = [name(rng) for _ in range(rng.randint(1, 4))]
    signature = ", ".join((["self"] if method else []) + [f"{a}: {rng.choice(TYPES)}" for a in args])
    indent = "        " if method else "    "
    lines = [
        f"{indent[:-4]}def {name(rng, 3)}({signature}) -> {rng.choice(TYPES)}:",
        f'{indent}"""Compute the {name(rng)} of the {name(rng)} for each {rng.choice(WORDS)} in the batch."""',
    ]
    for _ in range(rng.randint(4, 14)):
        a, b, c = rng.choice(args), name(rng), name(rng)
        roll = rng.random()
        if roll < 0.25:
            lines.append(
                f"{indent}{b} = torch.{rng.choice(('cat', 'stack', 'matmul', 'where'))}"
                f"([{a}, self.{c}], dim={rng.randint(-1, 2)})"
            )
        elif roll < 0.45:
            lines += [
                f"{indent}if {a} is None or {a}.{c} > {rng.randint(0, 4096)}:",
                f"{indent}    {a} = self.{b}.{c}({a}, {rng.choice(args)}, {rng.choice(WORDS)}={rng.random():.4f})",
            ]
        elif roll < 0.6:
            lines += [
                f"{indent}for i in range(len({a})):",
                f"{indent}    {b}[i] = {a}[i] * {rng.random():.3f} + self.{c}[i]  # {name(rng)} per "
                f"{rng.choice(WORDS)}",
            ]
        elif roll < 0.75:
            lines.append(
                f"{indent}# {rng.choice(WORDS).capitalize()} {name(rng)}: keep the {c} "
                f"aligned with the {rng.choice(WORDS)} pool"
            )
            lines.append(
                f"{indent}{b} = {{'{c}': {a}, '{rng.choice(WORDS)}': [{rng.randint(0, 99)}, "
                f"{rng.randint(0, 99)}], 'enabled': {rng.choice(('True', 'False'))}}}"
            )
        elif roll < 0.9:
            lines += [
                f"{indent}try:",
                f"{indent}    {b} = {a}.view(-1, self.{c}).contiguous()",
                f"{indent}except (RuntimeError, ValueError) as exc:",
                f'{indent}    logger.warning("{name(rng)} failed: %s", exc)',
                f"{indent}    {b} = None",
            ]
        else:
            lines.append(f'{indent}assert {a}.shape[0] == self.{c}, f"{b} mismatch: {{{a}.shape}}"')
    lines.append(f"{indent}return {rng.choice(args)}")
    return "\n".join(lines) + "\n"


def module(rng: random.Random, target_bytes: int, imports: list[str], lazy: list[str], extra: str = "") -> bytes:
    head = [f'"""{name(rng).capitalize()} {name(rng)} for the {rng.choice(WORDS)} runtime."""', ""]
    head += rng.sample(OUTSIDE, rng.randint(2, 6))
    head += [
        f"from {target.rpartition('.')[0]} import {target.rpartition('.')[2]}"
        if rng.random() < 0.5
        else f"import {target}"
        for target in imports
    ]
    head += ["", "logger = logging.getLogger(__name__)", "", extra]
    body = []
    size = sum(len(line) for line in head)
    for target in lazy:  # imports inside functions and try blocks, as SGLang's optional kernels are
        body.append(
            f"def _load_{name(rng)}():\n    try:\n        from {target} import {name(rng)}\n"
            f"    except ImportError:\n        return None\n"
        )
    while size < target_bytes:
        if rng.random() < 0.3:
            methods = "\n".join(function(rng, True) for _ in range(rng.randint(2, 6)))
            chunk = (
                f"\nclass {name(rng, 2).title().replace('_', '')}(nn.Module):\n"
                f'    """A {name(rng)} layer."""\n\n{methods}'
            )
        else:
            chunk = "\n" + function(rng, False)
        body.append(chunk)
        size += len(chunk)
    return ("\n".join(head) + "\n" + "\n".join(body)).encode()


def sglang_tree(seed: int = 7) -> dict[str, bytes]:
    """``{path: content}`` of the synthetic tree (see the module docstring)."""
    rng = random.Random(seed)
    sizes = lambda: min(int(rng.lognormvariate(8.55, 0.95)), 250_000)  # noqa: E731 - median 5.2 KB
    files: dict[str, bytes] = {}
    srt = [f"sglang.srt.{package}.{name(rng)}_{i}" for i in range(1080) for package in [rng.choice(SRT_PACKAGES)]]
    srt = list(
        dict.fromkeys(
            srt
            + [
                "sglang.srt.server_args",
                "sglang.srt.managers.scheduler",
                "sglang.srt.entrypoints.http_server",
                "sglang.srt.model_loader.loader",
            ]
        )
    )
    rng.shuffle(srt)
    # layered: a module imports mostly modules of lower layers, a few of any layer lazily
    for rank, mod in enumerate(srt):
        below = srt[:rank]
        imports = rng.sample(below, min(len(below), rng.randint(4, 14)))
        lazy = rng.sample(srt, rng.randint(0, 2)) if rng.random() < 0.2 else []
        extra = 'MODELS = ModelRegistry.register("sglang.srt.models")\n' if mod.endswith("loader") else ""
        big = {"sglang.srt.server_args": 200_000, "sglang.srt.managers.scheduler": 130_000}.get(mod)
        files[mod] = module(rng, big or sizes(), imports, lazy, extra)
    for package in SRT_PACKAGES:
        files[f"sglang.srt.{package}.__init__"] = b""
    files["sglang.srt.__init__"] = b""
    files["sglang.__init__"] = b'"""SGLang."""\n\n__version__ = "0.5.9"\n'
    top = srt[-40:] + ["sglang.srt.entrypoints.http_server", "sglang.srt.server_args"]
    files["sglang.launch_server"] = module(rng, 2_000, top, [])
    for i in range(70):  # tests and benchmark scripts: nothing imports them
        files[f"sglang.test.test_{name(rng)}_{i}"] = module(rng, sizes(), rng.sample(srt, 6), [])
    files["sglang.test.__init__"] = b""
    gen = [
        f"sglang.multimodal_gen.{rng.choice(('runtime', 'models', 'pipelines', 'configs'))}.{name(rng)}_{i}"
        for i in range(330)
    ]
    for rank, mod in enumerate(gen):
        files[mod] = module(rng, sizes(), rng.sample(gen[:rank], min(rank, 8)) + rng.sample(srt, 2), [])
    for package in ("", ".runtime", ".models", ".pipelines", ".configs"):
        files[f"sglang.multimodal_gen{package}.__init__"] = b""
    tree = {f"python/{mod.replace('.', '/')}.py": content for mod, content in files.items()}
    tree.update(
        {
            "README.md": b"# SGLang\n",
            "python/pyproject.toml": b"[project]\nname = 'sglang'\n",
            "sgl-kernel/csrc/allreduce/custom_all_reduce.cu": b"// kernel\n" * 200,
            "docs/index.md": b"# Docs\n" * 50,
        }
    )
    return tree


def write_repository(repo: Path, tree: dict[str, bytes], env: dict[str, str]) -> tuple[str, str]:
    """The tree as one commit, then a child changing the scheduler (the two versions a shift
    compares); one ``git fast-import``; returns the two commit ids."""
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True, env=env)
    stream = [b"commit refs/heads/main\nmark :1\ncommitter Ann <ann@example.com> 1700000000 +0000\ndata 3\nv1\n"]
    stream += [b"M 644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data) for path, data in tree.items()]
    change = tree["python/sglang/srt/managers/scheduler.py"] + b"\nOVERLAP = True\n"
    stream.append(
        b"\ncommit refs/heads/main\nmark :2\ncommitter Ann <ann@example.com> 1700000100 +0000\n"
        b"data 3\nv2\nfrom :1\nM 644 inline python/sglang/srt/managers/scheduler.py\ndata %d\n%s\n"
        % (len(change), change)
    )
    table = run_fast_import(repo, stream, env)
    return table[":1"], table[":2"]


def add_commit(repo: Path, parent: str, changes: dict[str, bytes], env: dict[str, str]) -> str:
    """A child of ``parent`` changing ``changes``, through ``git fast-import``; its id."""
    stream = [
        b"commit refs/heads/main\nmark :1\ncommitter Ann <ann@example.com> 1700000200 +0000\n"
        b"data 5\npull\nfrom %s\n" % parent.encode()
    ]
    stream += [b"M 644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data) for path, data in changes.items()]
    return run_fast_import(repo, stream, env, force=True)[":1"]


def cat_every_py_blob(repo: Path, commit: str, env: dict[str, str]) -> int:
    """The baseline: every ``.py`` blob of ``commit`` through one ``git cat-file --batch``; bytes read."""
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "-z", commit], cwd=repo, env=env, check=True, capture_output=True
    ).stdout
    ids = [entry.split(b"\t")[0].split()[2] for entry in listing.split(b"\0") if entry.endswith(b".py")]
    out = subprocess.run(
        ["git", "cat-file", "--batch"],
        input=b"\n".join(ids) + b"\n",
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    ).stdout
    return len(out)


def best(fns: dict, repeats: int, setups: dict | None = None) -> dict[str, float]:
    """The lowest wall-clock time of each function over ``repeats`` rounds; ``setups``: what runs,
    untimed, before a function."""
    results = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for label, fn in fns.items():
            (setups or {}).get(label, lambda: None)()
            start = time.perf_counter()
            fn()
            results[label] = min(results[label], time.perf_counter() - start)
    return results


def machine() -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), {model}, Python {sys.version.split()[0]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repeats", nargs="?", type=int, default=5)
    args = ap.parse_args()
    tree = sglang_tree()
    modules = [p for p in tree if p.endswith(".py")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    with tempfile.TemporaryDirectory(prefix="code-speed-") as tmp:
        repo = Path(tmp) / "repo.git"
        v1, v2 = write_repository(repo, tree, env)
        cache = ParseCache(Path(tmp) / "cache")
        warm = read_code(repo, [v1, v2], [v2], ENTRIES, cache=cache)
        cold = read_code(repo, [v1, v2], [v2], ENTRIES)
        assert warm == cold == read_code(repo, [v1, v2], [v2], ENTRIES, cache=cache), "cold and warm differ"
        assert not cold.problems, cold.problems
        # a pull: 10 of the files the server imports changed (the cache holds v1 and v2 only)
        pulled = random.Random(3).sample(sorted(cold.reach[v2].reached), 10)
        v3 = add_commit(repo, v2, {path: tree[path] + b"\nPULLED = True\n" for path in pulled}, env)
        kept = {entry: entry.read_bytes() for entry in cache.folder.iterdir()}

        def cache_of_v1_v2(tables: bool) -> None:
            """The cache as the reads of v1 and v2 left it, with or without their parse tables."""
            for entry in cache.folder.iterdir():
                entry.unlink()
            for entry, data in kept.items():
                if tables or entry.suffix != ".parses":
                    entry.write_bytes(data)

        pull = lambda: read_code(repo, [v2, v3], [v3], ENTRIES, cache=cache)  # noqa: E731
        cache_of_v1_v2(tables=True)
        assert pull() == read_code(repo, [v2, v3], [v3], ENTRIES), "the parse tables change the answer"
        results = best(
            {
                "baseline": lambda: cat_every_py_blob(repo, v1, env),
                "cold, 1 process": lambda: read_code(repo, [v1, v2], [v2], ENTRIES, jobs=1),
                "cold": lambda: read_code(repo, [v1, v2], [v2], ENTRIES),
                "warm": lambda: read_code(repo, [v1, v2], [v2], ENTRIES, cache=cache),
                "a new commit 10 files apart, no blob cache": pull,
                "a new commit 10 files apart, blob cache warm": pull,
            },
            args.repeats,
            setups={
                "a new commit 10 files apart, no blob cache": lambda: cache_of_v1_v2(tables=False),
                "a new commit 10 files apart, blob cache warm": lambda: cache_of_v1_v2(tables=True),
            },
        )
    reached = cold.reach[v1].reached
    size = sum(len(tree[p]) for p in modules)
    print(
        f"{len(modules):,} modules, {size / 1e6:.1f} MB; {len(reached):,} reached "
        f"({sum(len(tree[p]) for p in reached) / 1e6:.1f} MB); two versions, one suspect; best of {args.repeats}"
    )
    print(machine())
    base = results["baseline"]
    for label, seconds in results.items():
        print(f"  {label:44s} {seconds:7.3f} s  {seconds / base:6.1f}x baseline")


if __name__ == "__main__":
    main()
