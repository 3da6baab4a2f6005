"""`timeline build --html report.html`: one self-contained file, rendered by a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline.builder import build
from timeline.cli import app
from timeline.model import Culprit, Evidence, Shift, ShiftSide, Suspect
from timeline.render.html import CHART_BORDER, PALETTE, timeline_html

CHROMIUM = next(
    (path for path in (shutil.which("chromium"), "/usr/bin/chromium") if path and os.path.exists(path)), None
)


@pytest.fixture(scope="module")
def report(demo, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("report")
    target, document = out / "report.html", out / "timeline.json"
    result = CliRunner().invoke(
        app,
        [
            "build",
            str(demo.logs),
            "--repo",
            str(demo.repo),
            "--log-tz",
            "UTC",
            "--html",
            str(target),
            "--json",
            str(document),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "Timeline" in result.stdout  # the table is still printed
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "timeline.json"]  # atomic: no temporary left
    return target, json.loads(document.read_text())


def test_report_is_one_self_contained_file(report):
    path, _ = report
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in html  # the page may not fetch anything
    assert not re.search(r"<(script|link|img|iframe|object)\b", html, flags=re.IGNORECASE)
    assert not re.search(r"(src|href)\s*=|url\(|@import|https?://", html, flags=re.IGNORECASE)


def test_report_has_a_chart_per_group_and_every_table(report):
    path, document = report
    html = path.read_text(encoding="utf-8")
    assert html.count('<svg class="chart"') == 1  # the demo has one workload group
    assert html.count('<g class="run"') == len(document["runs"]) == 4
    # The pull and the reset fall inside the runs' time range; the clone (09:30) does not.
    assert re.findall(r'<g class="event" data-event="(e\d+)"', html) == ["e2", "e3"]
    assert "e2 pull: pull -q origin main: Fast-forward" in html
    for table in ("runs", "events"):
        assert f'<table id="{table}">' in html
    assert "<h2>Shifts</h2>" in html and "<h2>Suspects</h2>" in html
    # Points are coloured by commit: one colour per commit, the same in the legend.
    colours = {
        m.group(1): m.group(2)
        for m in re.finditer(r'data-commit="([0-9a-f]+)"><title>.*?stroke="(#[0-9a-f]{6})"', html, re.S)
    }
    assert len(set(colours.values())) == len(colours) == 3
    # The run during the pull is hollow (not tied to one commit exactly).
    assert 'fill="#ffffff"' in html


def test_shifts_are_highlighted(demo):
    built = build([demo.logs], repo=demo.repo, log_tz="UTC")
    runs = built.runs
    culprit_sha = runs[2].commit
    assert runs[0].commit and culprit_sha
    group = "Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3"
    built.shifts = [
        Shift(
            "s1",
            group,
            "decode_throughput",
            "tok/s",
            ShiftSide(runs[0].commit, ["r1"], 94.0),
            ShiftSide(culprit_sha, ["r3"], 60.0),
            -36.0,
            None,
            "regression",
            "line-spread",
            single_run=True,
            events=["e2"],
            suspects=[Suspect(culprit_sha, "Fix PCG MoE Error", "arrived", "e2", paths=["python/moe.py"])],
        )
    ]
    built.culprits = [
        Culprit(culprit_sha, "Fix PCG MoE Error", ["s1"], "sole", [Evidence("sole", "raises", ("s1",), count=0)])
    ]
    html = timeline_html(built)
    assert '<g class="shift" data-verdict="regression">' in html
    assert "s1 regression -36.0%" in html
    assert '<table id="shifts">' in html and '<table id="suspects">' in html and "python/moe.py" in html


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) into rows of pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        chunk = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, header
    channels = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous, offset = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[offset], bytearray(raw[offset + 1 : offset + 1 + stride])
        offset += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


def _chart_colour_counts(png: bytes, border: str, colours: list[str], tolerance: int = 6) -> dict[str, int]:
    """How many pixels inside the chart (the box drawn in ``border``) are each of ``colours``."""
    import numpy as np

    width, channels, rows = _png_pixels(png)
    image = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), width, channels)[:, :, :3]
    image = image.astype(np.int16)

    def mask(colour: str, slack: int):
        target = np.frombuffer(bytes.fromhex(colour.lstrip("#")), dtype=np.uint8).astype(np.int16)
        return (np.abs(image - target) <= slack).all(axis=2)

    ys, xs = np.nonzero(mask(border, 2))
    assert len(ys) > 400, "the chart's frame is not on the screenshot"
    top, bottom, left, right = ys.min(), ys.max(), xs.min(), xs.max()
    assert right - left > 600 and bottom - top > 200, (top, bottom, left, right)
    inside = (slice(top + 1, bottom), slice(left + 1, right))
    return {colour: int(mask(colour, tolerance)[inside].sum()) for colour in colours}


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-quic",
        "--disable-extensions",
        "--force-color-profile=srgb",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, timeout=180, stdin=subprocess.DEVNULL)


def test_chromium_draws_the_chart(report, tmp_path):
    if CHROMIUM is None:
        if os.environ.get("TIMELINE_REQUIRE_CHROMIUM"):
            pytest.fail("TIMELINE_REQUIRE_CHROMIUM is set (CI) but Chromium is not installed")
        pytest.skip("Chromium is not installed (Debian package chromium: apt-get install chromium; .ci/run does)")
    path, document = report
    page = path.as_uri()
    dom = _chromium("--dump-dom", page, profile=tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    text = dom.stdout.decode()
    assert text.count("<circle") == 4 and 'id="chart-1"' in text

    shot = tmp_path / "report.png"
    done = _chromium("--window-size=1000,560", f"--screenshot={shot}", page, profile=tmp_path / "profile-shot")
    assert done.returncode == 0 and shot.is_file(), done.stderr.decode(errors="replace")[-2000:]
    # Inside the chart's frame: each commit's points in its colour (the palette's first three) and
    # the code events' dashed markers in theirs.
    counts = _chart_colour_counts(shot.read_bytes(), CHART_BORDER, [*PALETTE[:3], "#555555"])
    for colour in PALETTE[:3]:
        assert counts[colour] > 40, f"no {colour} points drawn: {counts}"
    assert counts["#555555"] > 60, f"no event markers drawn: {counts}"


def test_one_chart_per_workload_group(captured_log, timeline_build):
    from html import escape

    from timeline.workload import workload_label

    built = timeline_build(captured_log.root)
    groups = {
        workload_label(run.config) or "(unknown workload)"
        for run in built.runs
        if run.start is not None and "decode_throughput" in run.metrics
    }
    html = timeline_html(built)
    assert len(groups) >= 3
    assert html.count('<svg class="chart"') == len(groups)
    for group in groups:
        assert f'data-group="{escape(group)}"' in html


def test_an_empty_timeline_still_makes_a_report(tmp_path):
    target = tmp_path / "empty.html"
    result = CliRunner().invoke(app, ["build", str(tmp_path), "--log-tz", "UTC", "--html", str(target)])
    assert result.exit_code == 0
    html = target.read_text(encoding="utf-8")
    assert "No run has a time and a decode throughput to chart." in html and "No runs found" in html
