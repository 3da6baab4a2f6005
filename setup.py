"""The one packaging rule pyproject.toml cannot say: ship the captured logs of the top-level
``fixtures/`` folder inside the package, as ``timeline/fixtures/``, so the pytest plugin's
``captured_log`` finds them after a plain ``pip install timeline`` (everything else about the
package is in pyproject.toml)."""

from setuptools import find_packages, setup

FIXTURE_FILES = ["**/*.log", "**/*.txt", "**/*.out", "**/*.gz", "**/*.bz2", "**/*.xz", "**/*.json", "**/*.md"]

setup(
    packages=[*find_packages(include=["timeline", "timeline.*", "parsers", "parsers.*"]), "timeline.fixtures"],
    package_dir={"timeline.fixtures": "fixtures"},
    package_data={"timeline.fixtures": FIXTURE_FILES, "timeline.schema": ["*.json"]},
)
