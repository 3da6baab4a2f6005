"""Which files of a Python source tree a server can import, found without running any of it; and
the code facts (reachability, changed lines) a culprit ranking reads. Pure: no git, no I/O.

Method: a static import graph, as the standard library's ``modulefinder``
(https://docs.python.org/3/library/modulefinder.html) and pydeps
(https://github.com/thebjorn/pydeps) build one. Breadth first from the entry modules, every
file reached is parsed with ``ast.parse`` (https://docs.python.org/3/library/ast.html), never
imported or run, and every import it could execute is followed, wherever it stands (in
functions, ``try``/``if`` blocks, ``TYPE_CHECKING`` blocks), by Python's rules for packages
(https://docs.python.org/3/reference/import.html): importing ``a.b.c`` runs ``a/__init__.py``
and ``a/b/__init__.py`` first; ``from a import b`` imports the submodule ``a.b`` when there is
one; relative imports resolve against the importing module's package.

Loading by name is followed where the name shows in the source:

* ``importlib.import_module``/``__import__`` with a constant name; with a computed one whose
  constant start names a package (``import_module(f"pkg.models.{name}")``, ``"pkg." + name``),
  every module under that package;
* any quoted string of the source that is the dotted name of a module or package of the tree
  (read from the text, so one in a comment counts too: over-approximating is safe): registries
  load a package by name and every module in it with ``pkgutil.iter_modules`` (SGLang's
  ``ModelRegistry.register("sglang.srt.models")``), so a package's name reaches every module
  under it (a top-level package's name only its ``__init__``: it is also how loggers and
  ``importlib.metadata`` name a project); ``"pkg.mod.Class"`` or ``"pkg.mod:Class"`` (a class
  loaded by its qualified name) reaches ``pkg.mod``; ``".mod"`` resolves against the package;
* a ``pkgutil.iter_modules``/``walk_packages`` call reaches every module of the caller's package.

Limits, each answered by over-approximating (a wrong "not imported" would hide the real
culprit; a wrong "imported" only fails to lower an innocent commit): a file that cannot be read
or parsed counts as importing its whole package. Not seen at all: names computed with no
constant package prefix, plugins found through installed entry-points metadata
(https://packaging.python.org/en/latest/specifications/entry-points/), code loaded or run by
file path, and other processes started from scripts.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from timeline.records import ChangedLine

__all__ = ["CodeFacts", "DEFAULT_ENTRIES", "Reach", "References", "reachable", "references_of"]

# The module a server family starts from, by the run kind its log parser gives (parsers/*.py):
# ``python -m sglang.launch_server``; vLLM's servers (``vllm serve``, the OpenAI API server) all
# live in the ``vllm.entrypoints`` package.
DEFAULT_ENTRIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "sglang-server": ("sglang.launch_server",),
        "vllm-server": ("vllm.entrypoints",),
    }
)

# How a quoted string may name a module: "pkg.mod", "..mod", "pkg.mod:Class" (a class in it).
_DOTTED = re.compile(r"(\.*)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::[\w.]+)?")
# ...found in the source text, quoted (in a comment too: over-approximating is safe).
_QUOTED_NAME = re.compile(
    rb"""["']((?:\.+[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?::[\w.]+)?)["']"""
)
# ...or as the constant start of a computed name, "pkg.sub.{x}" or "pkg.sub." + x, wherever it
# is built: vLLM's registry makes f"vllm.model_executor.models.{mod_relname}" long before it
# calls import_module (https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/models/registry.py).
_QUOTED_PREFIX = re.compile(rb"""["']([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\.(?:\{|["'])""")
_IMPORTERS = frozenset({"import_module", "__import__"})
_PACKAGE_SCANNERS = frozenset({"iter_modules", "walk_packages"})
_LOADERS = re.compile(rb"import_module|__import__|iter_modules|walk_packages")
# The fields of a statement that hold statements (``handlers``: except clauses; ``cases``: match).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
# A module's references: (imported name, whole package?) pairs, and quoted dotted names.
References = tuple[tuple[tuple[str, bool], ...], tuple[str, ...]]


@dataclass(frozen=True)
class Reach:
    """Which files of one version the entry modules can import (``reachable`` computes it).

    ``root``: the source root the entries were found under (``"python/"``; ``""`` for the top of
    the repository; None when no entry was found, and then nothing is judged). ``reached``: the
    repository paths of the modules reached. ``packages``: the folders under the root that are
    Python packages (hold an ``__init__.py``). ``modules``: every ``.py`` under the root.
    ``unknown``: reached files whose imports could not be read (unreadable, or not parsed),
    each counted as importing its whole package.
    """

    root: str | None
    reached: frozenset[str]
    packages: frozenset[str]
    entries_found: tuple[str, ...]
    modules: frozenset[str] = frozenset()
    unknown: frozenset[str] = frozenset()

    @cached_property
    def _module_folders(self) -> frozenset[str]:
        return frozenset(_folder(p) for p in self.modules)

    @cached_property
    def _reached_folders(self) -> frozenset[str]:
        return frozenset(_folder(p) for p in self.reached)

    def judge(self, path: str) -> bool | None:
        """True: the server can import ``path`` (a module reached), or ``path`` is a data file
        its modules sit next to (the nearest folder above it that holds modules holds a reached
        one: ``fused_moe/configs/*.json`` next to ``fused_moe/*.py``). False: ``path`` is a Python
        file in a package of the source tree and no import leads to it. None: not judged (outside
        the Python source tree, outside every package, no entry found, or a file other than
        Python whose folder no import reaches: a kernel a module may load by its path, as
        SGLang's JIT kernels are, is not lowered on imports alone)."""
        root = self.root
        if root is None or not path.startswith(root):
            return None
        if path in self.reached:
            return True
        if path not in self.modules:
            # a data file, or a file this version lacks: judged by its nearest module folder
            top = root.rstrip("/")
            folder = _folder(path)
            while True:
                if folder in self._reached_folders:
                    return True
                if folder in self._module_folders or folder == top or not folder:
                    break
                folder = _folder(folder)
            if not path.endswith(".py"):
                return None
        return False if self._in_package(path) else None

    def _in_package(self, path: str) -> bool:
        folder = _folder(path)
        while folder:
            if folder in self.packages:
                return True
            folder = _folder(folder)
        return False


@dataclass(frozen=True)
class CodeFacts:
    """What the git module read about the code of a job (``timeline.git.code.read_code``):
    ``reach``: version sha -> ``Reach``; ``changes``: commit sha -> the lines it changed;
    ``problems``: one line per fact that could not be read."""

    reach: dict[str, Reach] = field(default_factory=dict)
    changes: dict[str, tuple[ChangedLine, ...]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _folder(path: str) -> str:
    return path.rpartition("/")[0]


class _Tree:
    """The modules of a source tree by dotted name."""

    def __init__(self, paths: Collection[str], root: str):
        self.file_of: dict[str, str] = {}  # name -> its file (a package's: its __init__.py)
        self.folders: set[str] = set()  # names that are folders holding modules
        self.modules: set[str] = set()  # every .py under the root
        self.packages: set[str] = set()  # folders holding an __init__.py
        for path in paths:
            if not path.startswith(root) or not path.endswith(".py"):
                continue
            self.modules.add(path)
            parts = path[len(root) : -3].split("/")
            if parts[-1] == "__init__":
                parts.pop()
                if not parts:  # an __init__.py in the root itself: no package
                    continue
                self.packages.add(_folder(path))
            name = ".".join(parts)
            # a package and a module of one name: the import system takes the package
            if name not in self.file_of or path.endswith("/__init__.py"):
                self.file_of[name] = path
            for end in range(1, len(parts)):
                self.folders.add(".".join(parts[:end]))
        self.names = sorted(self.file_of)

    def under(self, package: str) -> list[str]:
        """The names of every module under ``package`` (at any depth)."""
        start = bisect.bisect_left(self.names, package + ".")
        stop = bisect.bisect_left(self.names, package + "/")  # "/" sorts just after "."
        return self.names[start:stop]

    def known(self, name: str) -> bool:
        return name in self.file_of or name in self.folders


def _find_root(paths: Collection[str], entries: Sequence[str]) -> str | None:
    """The source root of the first entry found (the shallowest, when found at several places):
    ``python/`` for ``sglang.launch_server`` at ``python/sglang/launch_server.py``."""
    for entry in entries:
        rel = entry.replace(".", "/")
        roots = set()
        for path in paths:
            if not path.endswith(".py"):
                continue
            for spelled in (rel + ".py", rel + "/"):  # a module, or a package (any file in it)
                at = path.find(spelled)
                while at >= 0:
                    whole_name = spelled.endswith("/") or at + len(spelled) == len(path)
                    if whole_name and (at == 0 or path[at - 1] == "/"):
                        roots.add(path[:at])
                    at = path.find(spelled, at + 1)
        if roots:
            return min(roots, key=lambda r: (r.count("/"), r))
    return None


class _Walker:
    """The breadth-first walk: ``reach`` marks modules, ``pending`` holds the files to read."""

    def __init__(self, tree: _Tree):
        self.tree = tree
        self.reached: dict[str, str] = {}  # file -> its module name
        self.pending: list[str] = []
        self.whole: set[str] = set()  # packages reached whole already

    def reach(self, name: str, whole: bool = False) -> None:
        """Import ``name``: every package above it first, then itself; with ``whole``, every
        module under it too (a package loaded by name, module by module)."""
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            self._add(".".join(parts[:end]))
        if whole and name in self.tree.folders and name not in self.whole:
            self.whole.add(name)
            for module in self.tree.under(name):
                self.reach(module)

    def _add(self, name: str) -> None:
        path = self.tree.file_of.get(name)
        if path is not None and path not in self.reached:
            self.reached[path] = name
            self.pending.append(path)


def reachable(
    paths: Collection[str],
    read: Callable[[list[str]], Mapping[str, bytes]],
    entries: Sequence[str],
    memo: MutableMapping[tuple[str, bytes | str], References | None] | None = None,
    parse: Callable[[list[tuple[str, bytes]]], list[References | None]] | None = None,
    ids: Mapping[str, str] | None = None,
) -> Reach:
    """The files of the tree ``paths`` (repository paths, ``/``-separated) that the ``entries``
    (dotted module or package names) can import; ``read(paths)`` gives the contents of the
    files asked for (a file left out counts as unreadable). Reads only the files reached, a
    breadth-first round at a time. ``memo``: a dict kept across calls (versions of one
    repository share most files) so that each content is parsed once, keyed by (package,
    content). ``parse``: what parses a round's new (package, source) pairs, ``references_of``
    or one giving the same answers (in worker processes). ``ids``: a name of each file's content
    (its git blob id): the memo is keyed by (package, id) instead, and a file whose references
    it holds is not read. See the module's docstring for the method and its limits."""
    root = _find_root(paths, entries)
    if root is None:
        return Reach(root=None, reached=frozenset(), packages=frozenset(), entries_found=())
    tree = _Tree(paths, root)
    walker = _Walker(tree)
    found = tuple(e for e in entries if tree.known(e))
    for entry in found:
        walker.reach(entry, whole=entry in tree.folders)
    memo = {} if memo is None else memo
    parse = references_of if parse is None else parse
    ids = {} if ids is None else ids
    unknown: set[str] = set()
    while walker.pending:
        batch, walker.pending = walker.pending, []
        packages = {path: _package_of(path, walker.reached[path]) for path in batch}
        found_in = _round_references(batch, packages, read, memo, parse, ids)
        for path in batch:
            references = found_in.get(path)
            if references is None:
                unknown.add(path)
            _follow(walker, tree, packages[path], references)
    return Reach(
        root=root,
        reached=frozenset(walker.reached),
        packages=frozenset(tree.packages),
        entries_found=found,
        modules=frozenset(tree.modules),
        unknown=frozenset(unknown),
    )


def _round_references(
    batch: list[str],
    packages: Mapping[str, str],
    read: Callable[[list[str]], Mapping[str, bytes]],
    memo: MutableMapping[tuple[str, bytes | str], References | None],
    parse: Callable[[list[tuple[str, bytes]]], list[References | None]],
    ids: Mapping[str, str],
) -> dict[str, References | None]:
    """The references of each file of one round of ``reachable``'s walk (a file left out could
    not be read): reads only the files whose content the memo does not name, and parses the
    round's new contents in one call, so that a pool can share it out."""
    named = {path: (packages[path], ids[path]) for path in batch if path in ids}
    contents = read([path for path in batch if named.get(path) not in memo])
    keys = {
        path: named.get(path) or (packages[path], contents[path])
        for path in batch
        if path in contents or named.get(path) in memo
    }
    new = {key: (packages[path], contents[path]) for path, key in keys.items() if key not in memo}
    memo.update(zip(new, parse(list(new.values())), strict=False))
    return {path: memo[key] for path, key in keys.items()}


def _follow(walker: _Walker, tree: _Tree, package: str, references: References | None) -> None:
    """Reach what one file in ``package`` can import; its whole package when its references are
    not known (unreadable or unparsable: over-approximating is safe, see the module's docstring)."""
    if references is None:
        if package:
            walker.reach(package, whole=True)
        return
    imports, strings = references
    for target, whole in imports:
        walker.reach(target, whole)
    for text in strings:
        named_module = _named_module(text, package, tree)
        if named_module is not None:
            walker.reach(*named_module)


def _package_of(path: str, name: str) -> str:
    """The package a module's relative imports resolve against (a package's own name)."""
    return name if path.endswith("/__init__.py") else name.rpartition(".")[0]


def _absolute(module: str | None, level: int, package: str) -> str | None:
    """The absolute name of ``from <level dots><module> import``; None when it climbs out of
    the top-level package (an ImportError at run time)."""
    if level == 0:
        return module
    base = package.split(".") if package else []
    if level - 1 >= len(base):
        return None
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def references_of(modules: Sequence[tuple[str, bytes]]) -> list[References | None]:
    """What each (package, source) pair can import (``_references``), in order: the parsing of a
    round of the walk, the part worth sharing among processes. Only strings and tuples in and
    out: pickled cheaply."""
    return [_references(source, package) for package, source in modules]


def _references(source: bytes, package: str) -> References | None:
    """What one module can import: the names its import statements and dynamic imports give
    (each with whether the whole package is meant), and the quoted strings of its source that
    read as dotted names (resolved against the tree by ``_named_module``). None when the source
    does not parse. Statements are walked, not every node: only calls of the importers and
    package scanners need the expressions, and only files that name one are walked whole."""
    try:
        syntax = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: list[tuple[str, bool]] = []
    stack: list = list(syntax.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            found.extend((alias.name, False) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            if base is not None:
                found.append((base, False))
                for alias in node.names:
                    # ``import *`` may import the submodules listed in ``__all__``: all of them, then
                    found.append((base, True) if alias.name == "*" else (f"{base}.{alias.name}", False))
        else:
            for block in _BLOCKS:  # nested statements: def, class, if, try, with, match...
                stack.extend(getattr(node, block, ()))
    if _LOADERS.search(source):
        for node in ast.walk(syntax):
            if isinstance(node, ast.Call):
                called = _called_name(node.func)
                if called in _IMPORTERS and node.args:
                    found.extend(_dynamic_import(node, package))
                elif called in _PACKAGE_SCANNERS and package:
                    found.append((package, True))
    named = _QUOTED_NAME.findall(source) + _QUOTED_PREFIX.findall(source)
    strings = tuple(dict.fromkeys(m.decode("utf-8", "replace") for m in named))
    return tuple(found), strings


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dynamic_import(call: ast.Call, package: str) -> list[tuple[str, bool]]:
    """``import_module(name, package)``/``__import__(name)``: a constant name; or the package a
    computed name's constant start names, whole."""
    arg = call.args[0]
    anchor = package
    given = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "package"), None)
    if isinstance(given, ast.Constant) and isinstance(given.value, str):
        anchor = given.value
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        name = _resolve(arg.value, anchor)
        return [(name, False)] if name else []
    prefix = _constant_start(arg)
    if prefix is None:
        return []
    dots = len(prefix) - len(prefix.lstrip("."))
    complete = prefix[dots:].rpartition(".")[0]  # "pkg.models.mod_" -> "pkg.models"
    if not dots and not complete:
        return []  # no package known: not followed
    name = _absolute(complete or None, dots, anchor) if dots else complete
    return [(name, True)] if name else []


def _resolve(name: str, package: str) -> str | None:
    """``name`` made absolute (``".mod"`` against ``package``)."""
    dots = len(name) - len(name.lstrip("."))
    return _absolute(name[dots:] or None, dots, package) if dots else name


def _constant_start(expr: ast.expr) -> str | None:
    """The constant text a computed string starts with: f"pkg.{x}", "pkg." + x, "pkg.%s" % x,
    "pkg.{}".format(x)."""
    if isinstance(expr, ast.JoinedStr) and expr.values:
        first = expr.values[0]
        return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mod)):
        left = expr.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return left.value.split("%")[0] if isinstance(expr.op, ast.Mod) else left.value
        return _constant_start(left) if isinstance(expr.op, ast.Add) else None
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "format"
        and isinstance(expr.func.value, ast.Constant)
        and isinstance(expr.func.value.value, str)
    ):
        return expr.func.value.value.split("{")[0]
    return None


def _named_module(text: str, package: str, tree: _Tree) -> tuple[str, bool] | None:
    """A string constant naming a module or package of the tree (see the module's docstring)."""
    if "." not in text:
        return None
    spelled = _DOTTED.fullmatch(text)
    if spelled is None:
        return None
    dots, name = spelled.groups()
    if dots:
        resolved = _absolute(name, len(dots), package)
        if resolved is None:
            return None
        name = resolved
    if name in tree.folders:
        return name, "." in name
    if name in tree.file_of:
        return name, False
    owner = name.rpartition(".")[0]  # "pkg.mod.Class": a class by qualified name
    if owner in tree.file_of:
        return owner, False
    return None
