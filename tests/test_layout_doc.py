"""The README's "Layout" names every module of the package, so it matches the tree."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_is_in_the_readme_layout():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout\n", 1)[1]
    modules = [
        p
        for folder in ("timeline", "parsers")
        for p in (ROOT / folder).rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    ]
    missing = sorted(str(p.relative_to(ROOT)) for p in modules if p.name not in layout)
    assert modules and not missing, f"not in README 'Layout': {missing}"
