"""The JSON Schema of the JSON document: shipped, printed by `timeline schema`, and met by every export.

Every document the test suite exports is validated against it by the autouse fixture
``exported_documents`` (tests/conftest.py), strictly: a field the schema does not describe fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from timeline.cli import app
from timeline.export import timeline_to_dict
from timeline.schema import load_schema, schema_path, strict_schema, validate

ROOT = Path(__file__).resolve().parents[1]


def test_schema_is_a_valid_draft_2020_12_schema():
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator.check_schema(strict_schema())


def test_schema_ships_inside_the_package():
    import timeline

    assert schema_path().parent == Path(timeline.__file__).parent / "schema"


def test_timeline_schema_prints_it():
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    assert result.stdout == schema_path().read_text(encoding="utf-8")
    assert json.loads(result.stdout)["properties"]["schema_version"]["const"] == 3


def test_exports_are_recorded_and_validated(demo, exported_documents):
    result = CliRunner().invoke(
        app, ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--json", "-", "--samples"]
    )
    assert result.exit_code == 0
    assert len(exported_documents) == 1
    validate(json.loads(result.stdout), strict=True)


def test_an_undescribed_field_fails_strictly_but_not_for_readers(demo):
    import timeline

    document = json.loads(json.dumps(timeline_to_dict(timeline.build([demo.logs], repo=demo.repo, log_tz="UTC"))))
    document["runs"][0]["brand_new"] = 1
    validate(document)  # the shipped schema lets newer documents add fields (the contract)
    with pytest.raises(ValueError, match=r"at /runs/0: Additional properties .*'brand_new'"):
        validate(document, strict=True)


@pytest.mark.parametrize(
    "path, value",
    [
        (("runs", 0, "start"), "2026-03-02 16:42:00"),  # no offset
        (("runs", 0, "attribution"), "probably"),
        (("events", 0, "new"), "8207398"),  # not a full sha
        (("schema_version",), 2),  # a version 2 document is not a version 3 one
        (("events", 1, "commits", 0), {"sha": "0" * 40}),  # commits are listed by position...
        (("events", 1, "commits", 0), "0" * 40),  # ...not by sha (version 2)
        (("events", 1, "commits", 0), -1),
        (("events", 1, "commits_removed"), [99]),  # past the end of commits
        (("commits", 0, "sha"), "8207398"),
    ],
)
def test_wrong_values_fail(demo, path, value):
    import timeline

    document = json.loads(json.dumps(timeline_to_dict(timeline.build([demo.logs], repo=demo.repo, log_tz="UTC"))))
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError, match="does not match the JSON schema"):
        validate(document)


def _properties(node, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        found.update(node.get("properties", {}))
        for value in node.values():
            _properties(value, found)
    elif isinstance(node, list):
        for value in node:
            _properties(value, found)
    return found


def test_every_field_in_docs_json_is_in_the_schema():
    names = _properties(load_schema(), set())
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    missing = []
    for row in re.findall(r"^\| (`[^|]+`) \|", text, flags=re.MULTILINE):
        for field in re.findall(r"`([^`]+)`", row):
            last = field.split(".")[-1].split("[")[0]
            if field.startswith("metrics.") or not re.fullmatch(r"[a-z_]+", last):
                continue
            if last not in names:
                missing.append(field)
    assert not missing, f"fields documented in docs/json.md but not in the schema: {missing}"
