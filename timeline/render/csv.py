"""CSV: one row per run, flat, for spreadsheets and ``pandas.read_csv``.

The same flat records (``timeline.render.plain.run_records``) feed ``runs_frame(Timeline)``, so
the CSV and the DataFrame always agree. No pandas here: writing a CSV must stay as fast as the table.

Columns, in order (README, "CSV and the HTML report"; ``plain.RUN_LEADING``):

- ``run_id``, ``source``, ``first_line``, ``last_line``, ``run_kind``, ``status`` (``ok``, ``crashed``,
  ``no-stats``)
- ``start``, ``end`` (ISO-8601 in UTC), ``start_local`` (as the log printed it), ``tz``, ``tz_source``,
  ``date_source`` (``stamp``, ``dated-line``, ``mtime``), ``duration_s``
- ``commit`` (full sha), ``commit_short``, ``commit_subject``, ``attribution``
- why an ambiguous run is so: ``ambiguous_reasons`` (``clock-tolerance``, ``dst``, ``zone-assumed``,
  ``reflog-clock-step``, separated by spaces), ``candidate_commits`` (every commit it may have run
  on, full shas separated by spaces), ``zone_readings`` (with ``zone-assumed``: the commit under
  each span of real-world offsets, west to east, ``UTC-12:00..-08:00 abc123def;
  UTC-07:00..+14:00 456789abc``; ``before-reflog`` where the reflog does not reach)
- ``events_during`` (ids separated by spaces)
- ``group`` (the workload label, e.g. ``Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3``)
- key configuration: ``model``, ``tp_size``, ``dp_size``, ``ep_size``, ``pp_size``,
  ``speculative_algorithm``, ``speculative_num_steps``, ``speculative_eagle_topk``,
  ``speculative_num_draft_tokens``, ``quantization``, ``dtype``, ``kv_cache_dtype``
- ``nccl_versions``, ``cuda_driver_versions`` (separated by spaces)
- ``steady_metric``, ``steady_value``, ``steady_unit``, ``steady_n``, ``steady_spread``: the one
  number the shifts compare
- ``error_line``, ``error`` (a crashed run's last error line, whole)
- per core metric (``decode_throughput``, ``accept_len``, ``prefill_input_throughput``):
  ``<metric>_n``, ``_median``, ``_mean``, ``_min``, ``_max``, and the spread ``_stddev``, ``_p10``,
  ``_p25``, ``_p75``, ``_p90``, ``_iqr`` (docs/json.md); then any other metric, in name
  order, as ``metric.<name>.<stat>``

The text comes from someone else's files, and a spreadsheet runs a cell that starts with ``=``,
``+``, ``-`` or ``@`` as a formula (``=HYPERLINK(...)`` as a model path): such a text cell starts
with ``'`` instead, as OWASP's CSV Injection page advises; numbers are written as they are.
Control characters show as their escapes (``timeline.render.safe``).
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from typing import Any

from timeline.model import Timeline
from timeline.render.plain import run_columns, run_records
from timeline.render.safe import displayable

# A text cell a spreadsheet would run as a formula (https://owasp.org/www-community/attacks/CSV_Injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def timeline_csv(timeline: Timeline) -> str:
    """The runs as CSV text (RFC 4180 quoting, ``\\n`` line ends, a header row); text that a
    spreadsheet would run as a formula starts with ``'``."""
    timeline = displayable(timeline)
    header = run_columns(timeline)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for record in run_records(timeline):
        writer.writerow([_cell(record[column]) for column in header])
    return buffer.getvalue()
