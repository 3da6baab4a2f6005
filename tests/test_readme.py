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


def test_readme_shows_the_demo_output_as_it_prints(monkeypatch):
    import re
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", "/tmp")  # the path is in the table: same width as shown

    from typer.testing import CliRunner

    from timeline.cli import app

    result = CliRunner().invoke(app, ["demo"], env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert result.exit_code == 0
    printed = re.sub(r"/tmp/timeline-demo-\w{8}", "/tmp/timeline-demo-k3v9q2xw", result.stdout)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = readme.split("```\nA checkout whose reflog", 1)[1].split("```\n\nRun `r2`", 1)[0]
    assert "A checkout whose reflog" + shown == printed


def test_the_notebook_recipe_runs_on_the_demo(demo, tmp_path, monkeypatch):
    """The README's Python recipe, as a user pastes it, on the demo's logs and checkout."""
    import matplotlib

    matplotlib.use("Agg")
    from typer.testing import CliRunner

    from timeline.cli import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    recipe = readme.split("## Python\n", 1)[1].split("```python\n", 1)[1].split("\n```", 1)[0]
    recipe = recipe.replace('"logs/"', repr(str(demo.logs))).replace('"~/sglang"', repr(str(demo.repo)))
    monkeypatch.chdir(tmp_path)
    args = ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--json", "timeline.json"]
    assert CliRunner().invoke(app, args).exit_code == 0
    namespace: dict = {}
    exec(compile(recipe, "README.md (Python)", "exec"), namespace)
    legend = [text.get_text() for text in namespace["ax"].get_legend().get_texts()]
    shas = demo.shas
    assert legend == [
        f"{shas['base2'][:9]} Tune NCCL allreduce for PCIe",
        f"{shas['pulled3'][:9]} Fix PCG MoE Error",
        f"{shas['pulled2'][:9]} Feat/add fi selective state update kernel call",
    ]
    assert (tmp_path / "timeline.png").stat().st_size > 10_000


def test_every_code_block_of_the_readme_is_closed():
    """An unclosed fence turns the rest of the README into code (a section was once lost so)."""
    fences = [
        (number, line)
        for number, line in enumerate((ROOT / "README.md").read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("```")
    ]
    opened = None
    for number, line in fences:
        if opened is None:
            opened = number
        else:
            assert line == "```", f"README.md line {number}: a block opened at line {opened} is not closed before it"
            opened = None
    assert opened is None, f"README.md line {opened}: a code block never closed"
