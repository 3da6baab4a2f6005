"""The README's test command is the one CI runs, verbatim."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run the tests", 1)[1]
    command = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    install_and_test = command.split("&& ", 2)[2]  # after creating and activating the venv
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert install_and_test in ci.splitlines()
