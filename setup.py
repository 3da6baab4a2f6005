"""The compiled parts of timeline: the SGLang fast path's line scanner (parsers/_scan.c) and the
order statistics of a run's series (timeline/_select.c).

Everything else is in pyproject.toml. Both extensions are optional: without a C compiler the
install still works, the fast path reads blocks with numpy alone (parsers/sglang_fast.py) and the
order statistics are picked by numpy (timeline/detect.py).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("timeline.parsers._scan", ["parsers/_scan.c"], optional=True),
        Extension("timeline._select", ["timeline/_select.c"], optional=True),
    ]
)
