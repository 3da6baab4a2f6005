"""`timeline build --html report.html`: one self-contained file, rendered by a real browser."""

from __future__ import annotations

import json
import math
import os
import re
import struct
import zlib
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from browser import CHROMIUM, Browser
from typer.testing import CliRunner

from timeline.builder import build
from timeline.cli import app
from timeline.model import Culprit, Evidence, Shift, ShiftSide, Suspect
from timeline.render.html import timeline_html
from timeline.render.html_chart import CHART_BORDER, LAYOUTS, PALETTE
from timeline.scenario import build_month


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
    # One group; decode throughput and accept length; over time and by commit; wide and narrow.
    assert html.count('<figure class="group"') == 1
    assert html.count('<svg class="chart"') == 2 * 2 * len(LAYOUTS)
    assert set(re.findall(r'data-metric="(\w+)"', html)) == {"decode_throughput", "accept_len"}
    assert html.count('<g class="run"') == len(document["runs"]) * 2 * 2 * len(LAYOUTS)
    # The pull and the reset fall inside the runs' time range; the clone (09:30, 7 hours before
    # the first run) does not. The time view marks them; the full message is in the hover title.
    assert set(re.findall(r'<g class="event" data-event="(e\d+)"', html)) == {"e2", "e3"}
    assert "<title>e2 pull: pull -q origin main: Fast-forward" in html
    assert '<text x="' in html and ">e2 pull</text>" in html  # the short label
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
    # The y axis is from the data (runs at 60 to 94 tok/s), and says so.
    bottom = re.search(r"axis from (\d+), not 0", html)
    assert bottom and 30 < int(bottom.group(1)) < 60


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
    assert '<g class="shift" data-shift="s1" data-verdict="regression">' in html
    assert "<title>s1 regression -36.0%</title>" in html and ">s1 -36.0%</text>" in html
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


def _need_chromium() -> None:
    if CHROMIUM is None:
        if os.environ.get("TIMELINE_REQUIRE_CHROMIUM"):
            pytest.fail("TIMELINE_REQUIRE_CHROMIUM is set (CI) but Chromium is not installed")
        pytest.skip("Chromium is not installed (Debian package chromium: apt-get install chromium; .ci/run does)")


def test_chromium_draws_the_chart(report, tmp_path):
    _need_chromium()
    path, _ = report
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(path.as_uri(), 1280, 640)
        drawn = browser.evaluate("document.querySelectorAll('svg.chart circle').length")
        shown = browser.evaluate("[...document.querySelectorAll('svg.chart')].filter(s => s.clientWidth).length")
        shot = browser.screenshot({"x": 0, "y": 0, "width": 1280, "height": 640})
    finally:
        browser.close()
    assert drawn == 4 * 2 * 2 * len(LAYOUTS) and shown == 2 * 2  # the wide layout's panels only
    # Inside the chart's frame: each commit's points in its colour (the palette's first three) and
    # the code events' dashed markers in theirs.
    counts = _chart_colour_counts(shot, CHART_BORDER, [*PALETTE[:3], "#555555"])
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
    for group in groups:
        assert f'<figure class="group" data-group="{escape(group)}">' in html


def test_an_empty_timeline_still_makes_a_report(tmp_path):
    target = tmp_path / "empty.html"
    args = ["build", str(tmp_path), "--log-tz", "UTC", "--allow-empty", "--html", str(target)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0
    html = target.read_text(encoding="utf-8")
    assert "No run has a time and a metric to chart." in html and "No runs found" in html


def test_a_panel_per_metric_present(tmp_path):
    """A server log with a bench client's results in it: decode throughput for the server's
    run; output throughput, TTFT and TPOT for the client's, in its own group."""
    fixture = Path(__file__).parents[2] / "fixtures" / "bench" / "bench-serving-in-server-log.log"
    built = build([fixture], log_tz="UTC")
    html = timeline_html(built)
    metrics = set(re.findall(r'data-metric="(\w+)"', html))
    assert metrics == {"decode_throughput", "output_throughput", "ttft_median", "tpot_median"}
    assert "TTFT, median (ms, median per run)" in html and "bench output throughput (tok/s" in html


def test_every_text_is_escaped(demo):
    built = build([demo.logs], repo=demo.repo, log_tz="UTC")
    hostile = '<img src=x onerror=alert(1)> & "quotes"'
    for event in built.events:
        event.message = hostile
        event.commits = [type(c)(c.sha, hostile) for c in event.commits]
    for run in built.runs:
        run.config["served_model_name"] = hostile
    html = timeline_html(built)
    assert "<img" not in html and "onerror=alert(1)>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot;" in html


# --- a month with 15 pulls, drawn by a real browser --------------------------------------------

SCREENSHOTS = Path(__file__).parents[2] / "docs"
# Every chart label (event, shift, tick, title, baseline note): inside its chart, and clear of
# every other, measured by the browser on the laid-out page.
MEASURE = """
(() => {
  const charts = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    const box = svg.getBoundingClientRect();
    if (box.width === 0) continue;  // the other layout's copy: not displayed
    const texts = [...svg.querySelectorAll('text')].map(t => {
      const r = t.getBoundingClientRect();
      return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
    });
    charts.push({id: svg.dataset.id, left: box.left, right: box.right, top: box.top, bottom: box.bottom, texts});
  }
  const boxes = [...document.querySelectorAll('.scroll, figure, p, h1, h2, h3, ul')].map(e => {
    const r = e.getBoundingClientRect();
    return {tag: e.tagName, left: r.left, right: r.right};
  });
  const figure = document.querySelector('figure.group').getBoundingClientRect();
  return JSON.stringify({
    charts, boxes, width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
    figure: {x: figure.left, y: figure.top + window.scrollY, width: figure.width, height: figure.height},
  });
})()
"""


def _overlap(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (
        a["left"] < b["right"] - slack
        and b["left"] < a["right"] - slack
        and a["top"] < b["bottom"] - slack
        and b["top"] < a["bottom"] - slack
    )


def _inside(text: dict, chart: dict, slack: float = 0.5) -> bool:
    return (
        text["left"] >= chart["left"] - slack
        and text["right"] <= chart["right"] + slack
        and text["top"] >= chart["top"] - slack
        and text["bottom"] <= chart["bottom"] + slack
    )


@pytest.fixture(scope="module")
def month_report(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("month")
    story = build_month(root)
    target, document = root / "report.html", root / "timeline.json"
    args = ["build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC"]
    result = CliRunner().invoke(app, [*args, "--html", str(target), "--json", str(document)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return target, json.loads(document.read_text())


def test_a_month_of_pulls_is_told_apart(month_report):
    path, document = month_report
    html = path.read_text(encoding="utf-8")
    assert len(document["runs"]) == 45 and sum(e["kind"] == "pull" for e in document["events"]) == 15
    wide = html[html.index('<div class="layout-wide">') :]
    wide = wide[: wide.index("</div>")]
    # 16 commits ran, 16 colours; the 44 nights and lunch breaks are drawn narrow and said so.
    colours = set(re.findall(r'<circle [^>]*stroke="(#[0-9a-f]{6})"', wide))
    assert len(colours) == 16 and colours <= set(PALETTE)
    assert wide.count('<g class="gap">') == 2 * 44 and "44 idle stretches of more than 3 hours" in html
    # Each code event has a line with its message on hover, and a label when there is room:
    # on the wide layout, every one.
    events = re.findall(r'<g class="event" data-event="(e\d+)">', wide)
    assert sorted(set(events), key=lambda e: int(e[1:])) == [f"e{n}" for n in range(1, 17)]
    labels = re.findall(r'class="label event-label">(e\d+)[^<]*</text>', wide)
    assert len(labels) == 16
    # The shifts with a verdict are shaded and labelled; the quiet ones are not drawn.
    verdicts = {s["id"]: s["verdict"] for s in document["shifts"]}
    shaded = set(re.findall(r'<g class="shift" data-shift="(s\d+)"', wide))
    assert shaded == {sid for sid, verdict in verdicts.items() if verdict} and len(shaded) >= 4
    # Ticks name days over a month; the y axis is from the data.
    assert ">Apr 1</text>" in wide and ">Apr 30</text>" in wide and "axis from 75, not 0" in wide


@pytest.mark.parametrize("width", [1280, 390])
def test_chromium_lays_out_the_month_without_overlap(month_report, tmp_path, width):
    _need_chromium()
    path, _ = month_report
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(path.as_uri(), width)
        layout = json.loads(browser.evaluate(MEASURE))
        shot = browser.screenshot(layout["figure"] | {"x": 0, "width": width})
    finally:
        browser.close()
    assert layout["width"] == width
    assert layout["scrollWidth"] <= width, "the page scrolls sideways: something is cut off"
    for box in layout["boxes"]:
        assert box["right"] <= width + 0.5, box  # tables scroll in their own box
    charts = layout["charts"]
    shown = "wide" if width >= 760 else "narrow"
    assert len(charts) == 4 and all(c["id"].startswith(shown) for c in charts)
    for chart in charts:
        assert chart["right"] <= width
        texts = chart["texts"]
        assert len(texts) > 10
        for text in texts:
            assert _inside(text, chart), f"{chart['id']}: {text['text']!r} leaves the chart"
        for i, first in enumerate(texts):
            for second in texts[i + 1 :]:
                assert not _overlap(first, second), f"{chart['id']}: {first['text']!r} overlaps {second['text']!r}"
    events_labelled = {t["text"].split()[0] for t in charts[0]["texts"] if re.fullmatch(r"e\d+( \w+)?", t["text"])}
    assert len(events_labelled) >= (16 if width >= 760 else 8)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) < 400_000
    if os.environ.get("TIMELINE_WRITE_SCREENSHOTS"):  # refresh the pictures in docs/
        (SCREENSHOTS / f"report-{width}.png").write_bytes(shot)


def test_past_twenty_commits_colours_follow_history(demo):
    """25 runs on 25 commits: too many colours to tell apart, so they run from oldest to
    newest along one scale, and the legend says so."""
    built = build([demo.logs], repo=demo.repo, log_tz="UTC")
    first = built.runs[0]
    assert first.start is not None
    built.runs = [
        replace(first, id=f"r{n + 1}", commit=f"{n + 1:040x}", start=first.start + timedelta(hours=4 * n), end=None)
        for n in range(25)
    ]
    built.runs[7].metrics = dict(
        first.metrics, decode_throughput=replace(first.metrics["decode_throughput"], median=math.inf)
    )
    html = timeline_html(built)
    assert "25 commits: coloured by history order, oldest dark blue to newest yellow" in html
    decode = html[html.index('<div class="layout-wide">') :]
    decode = decode[: decode.index("</svg>")]  # the first panel: decode throughput over time
    colours = re.findall(r'data-commit="([0-9a-f]+)"><title>.*?stroke="(#[0-9a-f]{6})"', decode, re.S)
    assert colours[0][1] == "#440154" and colours[-1][1] == "#fde725"
    assert len({colour for _, colour in colours}) == len({sha for sha, _ in colours}) == 24  # r8 is not drawn (inf)


def test_a_run_whose_commit_depends_on_the_zone_says_so_on_hover(demo):
    from timeline.model import ZoneReading

    built = build([demo.logs], repo=demo.repo, log_tz="UTC")
    run = built.runs[2]
    old, new = built.runs[0].commit, run.commit
    assert old and new
    run.attribution, run.ambiguous_reasons = "ambiguous", ["zone-assumed"]
    run.candidate_commits = [old, new]
    run.zone_readings = [
        ZoneReading(new, timedelta(hours=-12), timedelta(hours=-1)),
        ZoneReading(old, timedelta(0), timedelta(hours=14)),
    ]
    html = timeline_html(built)
    hover = re.search(rf'<g class="run" data-run="{run.id}" [^>]*><title>([^<]*)</title>', html)
    assert hover and "(ambiguous (zone assumed))" in hover.group(1)
    assert f"zone assumed (UTC): {new[:9]} at UTC-12:00 to -01:00, {old[:9]} at UTC+00:00 to +14:00" in hover.group(1)
    assert re.search(rf'data-run="{run.id}" [^>]*><title>.*?fill="#ffffff"', html, re.S)  # hollow
