"""The compiled part of timeline: the SGLang fast path's line scanner (parsers/_scan.c).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the
install still works, and the fast path reads blocks with numpy alone (parsers/sglang_fast.py).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("timeline.parsers._scan", ["parsers/_scan.c"], optional=True)])
