"""The JSON Schema (draft 2020-12) of the JSON document (schema version 3), shipped as package data.

``schema_text()`` is the file as shipped (what ``timeline schema`` prints); ``load_schema()``
the parsed schema, for ``jsonschema.validate(document, load_schema())``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_FILE = "timeline.schema.json"


def schema_path() -> Path:
    return Path(__file__).with_name(SCHEMA_FILE)


def schema_text() -> str:
    return schema_path().read_text(encoding="utf-8")


def load_schema() -> dict[str, Any]:
    return json.loads(schema_text())


def strict_schema() -> dict[str, Any]:
    """The schema with every described object closed (``additionalProperties: false``).

    The shipped schema lets newer documents add fields (the contract); the strict one is for
    timeline's own tests, so that a field added to the export without being described here (and
    in docs/json.md) fails a test. Open maps (``config``, ``metrics``, sample rows) stay open.
    """

    def close(node: Any) -> Any:
        if isinstance(node, dict):
            node = {key: close(value) for key, value in node.items()}
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            return node
        if isinstance(node, list):
            return [close(item) for item in node]
        return node

    return close(load_schema())


def validate(document: Any, *, strict: bool = False) -> None:
    """Raise ``ValueError`` listing every way ``document`` breaks the schema, or else each commit
    position an event lists that is past the end of ``commits`` (needs ``jsonschema``).

    ``document`` is the parsed JSON (``json.loads`` of the export, or ``timeline_to_dict(Timeline)``).
    """
    try:
        import jsonschema
    except ImportError as missing:  # pragma: no cover - the test extra installs it
        raise ImportError("validating needs the jsonschema package: pip install 'timeline[test]'") from missing
    schema = strict_schema() if strict else load_schema()
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    found = [(list(error.absolute_path), error.message) for error in errors]
    if not errors:
        found = _positions_past_the_end(document)
    if found:
        lines = [f"  at /{'/'.join(str(p) for p in path)}: {message}" for path, message in found[:20]]
        more = f"\n  ... {len(found) - 20} more" if len(found) > 20 else ""
        hint = (
            ("\n(a new field or value? describe it in timeline/schema/timeline.schema.json and docs/json.md)")
            if strict
            else ""
        )
        raise ValueError("the document does not match the JSON schema:\n" + "\n".join(lines) + more + hint)


def _positions_past_the_end(document: dict[str, Any]) -> list[tuple[list[str | int], str]]:
    """What JSON Schema cannot say: each position an event lists is one of ``commits``."""
    count = len(document["commits"])
    return [
        ([part, number, key, index], f"{position} is not a position in commits ({count} commits)")
        for part in ("events", "context")
        for number, event in enumerate(document.get(part, []))
        for key in ("commits", "commits_removed")
        for index, position in enumerate(event[key])
        if position >= count
    ]
