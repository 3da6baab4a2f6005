"""One test case per log-line format, for every release that changed it, of SGLang and vLLM.

Every line here is built from the format string that release prints (as shipped in its wheel;
``F2`` = two decimals, ``B`` = a Python bool); the expected values are the numbers written into
the line. The section numbers in the rulers, test names and ids group the cases:

* 1 SGLang's logger: 1.1 the header of ``configure_logger``
  (https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/utils/common.py;
  ``srt/utils.py`` up to 0.5.2), 1.2 the rank tags of the scheduler process, 1.3 other lines
  (uvicorn, tqdm bars, tracebacks, wrappers);
* 2 the scheduler's stats lines: 2.2 ``Decode batch``, 2.3 ``Prefill batch`` (``scheduler.py`` up
  to 0.4.9, then ``scheduler_metrics_mixin.py``, now
  https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/managers/scheduler_components/metrics_reporter.py);
* 3 NCCL version lines (``pynccl.py`` of SGLang and vLLM, NCCL's own ``NCCL INFO`` line);
* 4 the ``server_args=`` configuration print
  (https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/server_args.py);
* 5 run-phase markers (weights loaded, CUDA graphs, "The server is fired up");
* 6 benchmark clients (https://github.com/sgl-project/sglang/blob/main/python/sglang/bench_serving.py,
  ``bench_one_batch``, vLLM's https://github.com/vllm-project/vllm/blob/main/vllm/benchmarks/serve.py);
* 7 vLLM server logs (https://github.com/vllm-project/vllm/blob/main/vllm/logger.py).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from timeline.columns import SampleRows
from timeline.parsers import parse_file
from timeline.parsers.bench import metric_for_label
from timeline.parsers.sglang import parse_stats_message
from timeline.parsers.values import nccl_version
from timeline.parsers.vllm import engine_config, spec_fields, throughput_fields

SERVER_ARGS = "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)"


def parse_text(tmp_path: Path, text: str, *, mtime: datetime | None = None, name: str = "t.log"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    if mtime is not None:
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return parse_file(path, source=name, keep_samples=True)


def one_run(parsed, kind: str = "sglang-server"):
    runs = [r for r in parsed.runs if r.kind == kind]
    assert len(runs) == 1, [(r.kind, r.first_line) for r in parsed.runs]
    return runs[0]


# --------------------------------------------------------------------------- §1.1 logger formats


@pytest.mark.parametrize(
    "line,time",
    [
        pytest.param("[12:00:05 TP0] Decode batch. {body}", "2026-01-01T12:00:05", id="1.1-0.2-0.3.2-time-only"),
        pytest.param(
            "[2026-01-01 12:00:05 TP0] Decode batch. {body}", "2026-01-01T12:00:05", id="1.1-0.3.4-0.5.5-dated"
        ),
        pytest.param(
            "[2026-01-01 12:00:05.123 TP0] Decode batch, {body}",
            "2026-01-01T12:00:05.123000",
            id="1.1-0.5.6+-SGLANG_LOG_MS",
        ),
        pytest.param(
            "[2026-01-01 12:00:05 TP0] INFO scheduler.py:1234: Decode batch, {body}",
            "2026-01-01T12:00:05",
            id="1.1-custom-LEVEL-file.py:LINE",
        ),
    ],
)
def test_1_1_logger_formats(tmp_path: Path, line: str, time: str) -> None:
    body = "#running-req: 1, #token: 9, token usage: 0.00, gen throughput (token/s): 42.50, #queue-req: 0"
    parsed = parse_text(tmp_path, line.format(body=body) + "\n", mtime=datetime(2026, 1, 1, 13, 0))
    run = one_run(parsed)
    assert list(run.series["decode_throughput"]) == [42.5]
    assert run.samples["decode"][0]["time"].isoformat() == time and run.samples["decode"][0]["rank"] == "TP0"


def test_1_1_diffusion_logger_is_not_the_llm_server(tmp_path: Path) -> None:
    # "%(levelname)s %(asctime)s [%(filename)s: %(lineno)d] %(message)s" (a space after the colon)
    parsed = parse_text(
        tmp_path, "INFO 03-01 10:00:00 [parallel_state.py: 212] sglang-diffusion is using nccl==2.27.3\n"
    )
    assert [r.kind for r in parsed.runs] == ["sglang-server"] and parsed.runs[0].nccl_versions == ["2.27.3"]


# --------------------------------------------------------------------------- §1.2 rank prefixes


@pytest.mark.parametrize(
    "stamp,rank",
    [
        pytest.param("12:00:00 DP1 TP0", "DP1 TP0", id="1.2-0.2-0.3.2-rank0-with-DP"),
        pytest.param("12:00:00 TP3", "TP3", id="1.2-0.2-0.3.2-other-ranks"),
        pytest.param("2026-01-01 12:00:00 TP0", "TP0", id="1.2-0.3.4-0.4.6-TP0-even-tp1"),
        pytest.param("2026-01-01 12:00:00 DP1 TP0", "DP1 TP0", id="1.2-0.3.4-0.4.6-DP-TP"),
        pytest.param("2026-01-01 12:00:00", None, id="1.2-0.4.7+-tp1-no-prefix"),
        pytest.param("2026-01-01 12:00:00 DP0 TP1 PP1", "DP0 TP1 PP1", id="1.2-0.4.7-0.4.9-DP-TP-PP"),
        pytest.param("2026-01-01 12:00:00 DP0 TP3 EP3 PP1", "DP0 TP3 EP3 PP1", id="1.2-0.4.10-0.5.5-DP-TP-EP-PP"),
        pytest.param("2026-01-01 12:00:00 DP0 PP1 TP3 EP3", "DP0 PP1 TP3 EP3", id="1.2-0.5.6-0.5.8-DP-PP-TP-EP"),
        pytest.param(
            "2026-01-01 12:00:00 DP1 PP0 ATTN_CP1 MOE_DP0 TP5 EP5",
            "DP1 PP0 ATTN_CP1 MOE_DP0 TP5 EP5",
            id="1.2-0.5.9-0.5.12-ATTN_CP-MOE_DP",
        ),
        pytest.param("2026-01-01 12:00:00 DP6 TP6 EP6", "DP6 TP6 EP6", id="1.2-0.5.13-0.5.23-dp-attention"),
        pytest.param("2026-01-01 12:00:00 encode_server", "encode_server", id="1.2-0.5.13+-encode-server"),
        pytest.param(
            "2026-01-01 12:00:00 encode_dp_worker[2]", "encode_dp_worker[2]", id="1.2-0.5.13+-encode-dp-worker"
        ),
    ],
)
def test_1_2_rank_prefixes(tmp_path: Path, stamp: str, rank: str | None) -> None:
    line = f"[{stamp}] Decode batch, #running-req: 1, gen throughput (token/s): 7.00, #queue-req: 0"
    run = one_run(parse_text(tmp_path, line + "\n", mtime=datetime(2026, 1, 1, 13, 0)))
    assert run.samples["decode"][0]["rank"] == rank and list(run.series["decode_throughput"]) == [7.0]


# --------------------------------------------------------------------------- §1.3 other lines


def test_1_3_lines_without_the_bracket_prefix_are_harmless(tmp_path: Path) -> None:
    text = (
        "\n".join(
            [
                SERVER_ARGS,
                "[2026-01-01 10:00:05] INFO:     Started server process [12345]",
                "[2026-01-01 10:00:05] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
                '[2026-01-01 10:00:06] INFO:     127.0.0.1:53422 - "GET /get_model_info HTTP/1.1" 200 OK',
                'INFO:     127.0.0.1:53430 - "POST /generate HTTP/1.1" 200 OK',
                "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.52it/s]",
                "Capturing batches (avail_mem=38.12 GB): 100%|\u2588\u2588\u2588\u2588| 35/35 [00:04<00:00,  7.9it/s]",
                "Capturing batches (bs=1 avail_mem=38.12 GB): 100%|\u2588\u2588\u2588\u2588| 36/36 [00:06<00:00,  5.61it/s]",
                "Compiling num tokens (num_tokens=4096): 100%|\u2588\u2588| 58/58 [00:20<00:00,  2.90it/s]",
                "Capturing num tokens (num_tokens=4096 avail_mem=30.10 GB): 100%|\u2588\u2588| 58/58 [00:09<00:00,  6.1it/s]",
                "Capturing prefill shape (num_tokens=8192 avail_mem=29.00 GB): 100%|\u2588\u2588| 12/12 [00:02<00:00,  5.0it/s]",
                "[2026-01-01 10:01:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
                '  File "/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process',
                "torch.OutOfMemoryError: CUDA out of memory.",
                "[2026-01-01 10:01:00] DetokenizerManager hit an exception: Traceback (most recent call last):",
                "[2026-01-01 10:01:00] Received sigquit from a child process. It usually means the child failed.",
                "/usr/lib/python3/dist-packages/x.py:123: UserWarning: something",
                "  warnings.warn(",
                "gpu-a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
                "INFO 08-15 10:11:12 custom_all_reduce.py:203] Registering 2275 cuda graph addresses",
                "[2026-01-01 10:02:00 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 9.50, #queue-req: 0",
            ]
        )
        + "\n"
    )
    parsed = parse_text(tmp_path, text)
    run = one_run(parsed)
    assert (run.first_line, run.last_line) == (1, 21) and list(run.series["decode_throughput"]) == [9.5]
    assert parsed.diagnostics == []


# --------------------------------------------------------------------------- §2.2 decode lines

DECODE_ROWS = [
    (
        "2.2-0.2-0.4.1",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"running_req": 32, "token": 12345, "token_usage": 0.05, "queue_req": 0},
    ),
    (
        "2.2-0.4.2-0.4.3-spec",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, accept len: 3.12, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"accept_len": 3.12},
    ),
    (
        "2.2-0.4.4-largest-len-trailing",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, accept len: 3.12, gen throughput (token/s): 1523.44, largest-len: 812, #queue-req: 0, ",
        {"largest_len": 812, "queue_req": 0},
    ),
    (
        "2.2-0.4.5-trailing",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, gen throughput (token/s): 1523.44, #queue-req: 0, ",
        {"queue_req": 0},
    ),
    (
        "2.2-0.4.6-pre-allocated",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, accept len: 3.12, pre-allocated usage: 0.02, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"pre_allocated_usage": 0.02},
    ),
    (
        "2.2-0.4.7-0.4.9-cuda-graph",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"cuda_graph": True},
    ),
    (
        "2.2-0.4.10-0.5.3-trailing",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, accept len: 3.12, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, ",
        {"cuda_graph": True, "accept_len": 3.12},
    ),
    (
        "2.2-0.5.2-0.5.8-cpu-graph",
        "Decode batch. #running-req: 32, #token: 12345, token usage: 0.05, cpu graph: False, gen throughput (token/s): 1523.44, #queue-req: 0, ",
        {"cpu_graph": False},
    ),
    (
        "2.2-0.5.9+-npu-graph",
        "Decode batch, #running-req: 32, #token: 12345, token usage: 0.05, npu graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"npu_graph": True},
    ),
    (
        "2.2-0.5.11+-musa-graph",
        "Decode batch, #running-req: 32, #token: 12345, token usage: 0.05, musa graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"musa_graph": True},
    ),
    (
        "2.2-0.5.4-forward-counter",
        "Decode batch [39913], #running-req: 78, #token: 432100, token usage: 0.27, accept len: 3.12, accept rate: 0.78, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, ",
        {"forward_ct": 39913, "accept_rate": 0.78},
    ),
    (
        "2.2-0.5.4.post3-0.5.8",
        "Decode batch, #running-req: 32, #token: 12345, token usage: 0.05, accept len: 3.12, accept rate: 0.78, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, ",
        {"accept_rate": 0.78, "queue_req": 0},
    ),
    (
        "2.2-0.5.9+-no-trailing",
        "Decode batch, #running-req: 32, #token: 12345, token usage: 0.05, waiting-image-req: 2, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"waiting_image_req": 2},
    ),
    (
        "2.2-usage-hybrid-swa",
        "Decode batch, #running-req: 2, #full token: 5632, full token usage: 0.12, #swa token: 1024, swa token usage: 0.05, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 1",
        {"full_token": 5632, "swa_token": 1024, "swa_token_usage": 0.05, "token": None},
    ),
    (
        "2.2-usage-hybrid-mamba",
        "Decode batch, #running-req: 2, #full token: 5632, full token usage: 0.12, mamba num: 4, mamba usage: 0.03, accept len: 3.12, accept rate: 0.56, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 1",
        {"mamba_num": 4, "mamba_usage": 0.03},
    ),
    (
        "2.2-usage-hisparse",
        "Decode batch, #running-req: 2, #token: 5632, token usage: 0.12, #gpu token: 4096, gpu token usage: 0.10, #cpu token: 1536, cpu token usage: 0.01, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 1",
        {"gpu_token": 4096, "cpu_token_usage": 0.01},
    ),
    (
        "2.2-usage-0.4.9-swa-allocator",
        "Decode batch. #running-req: 2, #token: full=5632, swa=1024, token usage: full=0.12, swa=0.05, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 1",
        {"token": "full=5632, swa=1024", "token_usage": "full=0.12, swa=0.05"},
    ),
    (
        "2.2-spec-cap-len-block-accept-len",
        "Decode batch, #running-req: 2, #token: 99, token usage: 0.00, accept len: 3.12, accept rate: 0.56, cap len: 3.90, block accept len: 2.80, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"cap_len": 3.9, "block_accept_len": 2.8},
    ),
    (
        "2.2-pd-0.4.6-0.4.7",
        "Decode batch. #running-req: 1, #token: 33, token usage: 0.00, pre-allocated usage: 0.00, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"pre_allocated_usage": 0.0},
    ),
    (
        "2.2-pd-0.4.8-0.5.2",
        "Decode batch. #running-req: 1, #token: 33, token usage: 0.00, pre-allocated usage: 0.00, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"retracted_req": 0},
    ),
    (
        "2.2-pd-0.5.3+",
        "Decode batch, #running-req: 1, #token: 33, token usage: 0.00, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"prealloc_req": 0, "transfer_req": 0},
    ),
    (
        "2.2-pd-0.5.21+-host-receive",
        "Decode batch, #running-req: 1, #token: 33, token usage: 0.00, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #host-receive-req: 3, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
        {"host_receive_req": 3},
    ),
    (
        "2.2-suffix-mfu",
        "Decode batch, #running-req: 1, #token: 33, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, est. decode TFLOPS/s (per GPU): 312.40, est. read BW (GB/s per GPU): 2875.10, est. write BW (GB/s per GPU): 41.22",
        {"est_decode_tflops_s": 312.4, "est_read_bw": 2875.1, "est_write_bw": 41.22, "queue_req": 0},
    ),
    (
        "2.2-suffix-fwd-occupancy-0.5.11-0.5.20",
        "Decode batch, #running-req: 1, #token: 33, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, fwd occupancy: 91.30%",
        {"fwd_occupancy": 91.3},
    ),
    (
        "2.2-suffix-fwd-idle-occupancy-0.5.21+",
        "Decode batch, #running-req: 1, #token: 33, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, fwd occupancy: 91.30%, fwd+idle occupancy: 97.85%",
        {"fwd_idle_occupancy": 97.85},
    ),
]


@pytest.mark.parametrize("message,fields", [pytest.param(m, f, id=i) for i, m, f in DECODE_ROWS])
def test_2_2_decode_rows(tmp_path: Path, message: str, fields: dict) -> None:
    parsed = parse_stats_message(message)
    assert parsed is not None and parsed[0] == "decode"
    counter, values = parsed[1], parsed[2]
    assert values["gen_throughput"] == 1523.44
    for key, want in fields.items():
        if key == "forward_ct":
            assert counter == want
        else:
            assert values.get(key) == want, key
    run = one_run(parse_text(tmp_path, f"{SERVER_ARGS}\n[2026-01-01 10:00:05 TP0] {message}\n"))
    assert list(run.series["decode_throughput"]) == [1523.44]
    assert list(run.series.get("accept_len", [])) == ([values["accept_len"]] if "accept_len" in values else [])


# --------------------------------------------------------------------------- §2.3 prefill lines

PREFILL_ROWS = [
    (
        "2.3-0.2-0.3.0",
        "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, cache hit rate: 0.00%, #running-req: 0, #queue-req: 0",
        {"cache_hit_rate": 0.0, "running_req": 0},
    ),
    (
        "2.3-0.2-0.3.0-mixed",
        "Prefill batch(mixed #running-req: 4). #new-seq: 2, #new-token: 412, #cached-token: 96, cache hit rate: 18.75%, #queue-req: 0",
        {"mixed": True, "running_req": 4, "cache_hit_rate": 18.75},
    ),
    (
        "2.3-0.3.2-0.3.4",
        "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, cache hit rate: 45.67%, token usage: 0.05, #running-req: 0, #queue-req: 0",
        {"token_usage": 0.05, "cache_hit_rate": 45.67},
    ),
    (
        "2.3-0.3.2-0.3.4-mixed",
        "Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 7, #cached-token: 0, cache hit rate: 45.67%, token usage: 0.05, #queue-req: 0",
        {"mixed": True, "running_req": 3},
    ),
    (
        "2.3-0.3.6-0.4.3",
        "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, cache hit rate: 45.67%, token usage: 0.05, #running-req: 0, #queue-req: 0",
        {"new_token": 7},
    ),
    (
        "2.3-0.4.4-0.4.5-trailing",
        "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.05, #running-req: 0, #queue-req: 0, ",
        {"queue_req": 0, "cache_hit_rate": None},
    ),
    (
        "2.3-0.4.6-0.4.9",
        "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3",
        {"cached_token": 1024},
    ),
    (
        "2.3-0.4.6-pd",
        "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #unbootstrapped-req: 1, #queue-req: 3, #transferring-req: 2 ",
        {"unbootstrapped_req": 1, "transferring_req": 2},
    ),
    (
        "2.3-0.4.7-pd-time",
        "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #unbootstrapped-req: 1, #queue-req: 3, #transferring-req: 2, time: 1.23 ",
        {"time_field": 1.23},
    ),
    (
        "2.3-0.4.8-0.4.9-pd",
        "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #unbootstrapped-req: 1, #queue-req: 3, #transferring-req: 2, input throughput (token/s): 23456.79 ",
        {"input_throughput": 23456.79},
    ),
    (
        "2.3-0.4.10-0.5.2",
        "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, ",
        {"running_req": 12},
    ),
    (
        "2.3-0.4.10-0.5.2-swa",
        "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 1024, full token usage: 0.05, swa token usage: 0.02, #running-req: 12, #queue-req: 3, ",
        {"swa_token_usage": 0.02},
    ),
    (
        "2.3-0.5.3-pd",
        "Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, #prealloc-req: 1, #inflight-req: 2, ",
        {"inflight_req": 2},
    ),
    (
        "2.3-0.5.4-counter-gdn",
        "Prefill batch [40118], #new-seq: 2, #new-token: 2048, #cached-token: 0, full token usage: 0.00, mamba usage: 0.03, #running-req: 0, #queue-req: 0, ",
        {"forward_ct": 40118, "mamba_usage": 0.03},
    ),
    (
        "2.3-0.5.4.post3-0.5.8-pd",
        "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, #prealloc-req: 1, #inflight-req: 2, input throughput (token/s): 23456.79, ",
        {"input_throughput": 23456.79},
    ),
    (
        "2.3-0.5.9",
        "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, input throughput (token/s): 23456.79, cuda graph: False",
        {"cuda_graph": False},
    ),
    (
        "2.3-0.5.10-swapped-order",
        "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, waiting-image-req: 1, cuda graph: False, input throughput (token/s): 23456.79, est. prefill TFLOPS/s (per GPU): 410.22",
        {"est_prefill_tflops_s": 410.22},
    ),
    (
        "2.3-0.5.11-pending-token",
        "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, #pending-token: 0, cuda graph: False, input throughput (token/s): 23456.79, fwd occupancy: 88.10%",
        {"pending_token": 0, "fwd_occupancy": 88.1},
    ),
    (
        "2.3-0.5.12-0.5.15-pd-bootstrap",
        "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, #pending-token: 0, #bootstrap-req: 1, #inflight-req: 2, cuda graph: False, input throughput (token/s): 23456.79",
        {"bootstrap_req": 1},
    ),
    (
        "2.3-0.5.16-0.5.20-pd-optimistic",
        "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, #pending-token: 0, #bootstrap-req: 1, #inflight-req: 2, #optimistic-req: 1, cuda graph: False, input throughput (token/s): 23456.79",
        {"optimistic_req": 1},
    ),
    (
        "2.3-0.5.21-0.5.23-replay",
        "Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 1024, token usage: 0.05, #running-req: 12, #queue-req: 3, #pending-token: 0, #replay-token: 512, cuda graph: False, input throughput (token/s): 23456.79, fwd occupancy: 88.10%, fwd+idle occupancy: 95.00%",
        {"replay_token": 512, "fwd_idle_occupancy": 95.0},
    ),
]


@pytest.mark.parametrize("message,fields", [pytest.param(m, f, id=i) for i, m, f in PREFILL_ROWS])
def test_2_3_prefill_rows(tmp_path: Path, message: str, fields: dict) -> None:
    parsed = parse_stats_message(message)
    assert parsed is not None and parsed[0] == "prefill"
    for key, want in fields.items():
        got = parsed[1] if key == "forward_ct" else parsed[2].get(key)
        assert got == want, key
    run = one_run(parse_text(tmp_path, f"{SERVER_ARGS}\n[2026-01-01 10:00:05 TP0] {message}\n"))
    want_tp = [parsed[2]["input_throughput"]] if "input_throughput" in parsed[2] else []
    assert list(run.series.get("prefill_input_throughput", [])) == want_tp
    assert len(run.samples["prefill"]) == 1 and "decode_throughput" not in run.series


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(
            "KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.6100",
            id="2.4-retract-0.5.8",
        ),
        pytest.param(
            "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 4096, #mamba_num_gained: 2, #new_token_ratio: 0.3000 -> 0.4500",
            id="2.4-retract-0.5.9+",
        ),
        pytest.param(
            "Testing retraction. #retracted_reqs: 1, #new_token_ratio: 0.3000 -> 0.4500", id="2.4-testing-retraction"
        ),
        pytest.param("Decode out of memory. Try to lower your batch size.", id="2.4-decode-oom"),
        pytest.param("Cache flushed successfully!", id="2.4-cache-flushed"),
        pytest.param("avg_spec_accept_length=3.21", id="2.4-avg-spec-accept-length"),
    ],
)
def test_2_4_other_scheduler_lines_are_not_stats(tmp_path: Path, message: str) -> None:
    parsed = parse_text(tmp_path, f"{SERVER_ARGS}\n[2026-01-01 10:00:05 TP0] {message}\n")
    run = one_run(parsed)
    assert (
        run.series == {}
        and run.samples == {"decode": SampleRows(), "prefill": SampleRows()}
        and parsed.diagnostics == []
    )


# --------------------------------------------------------------------------- §3 NCCL


@pytest.mark.parametrize(
    "line,version",
    [
        pytest.param("[2025-07-01 12:00:10 TP0] sglang is using nccl==2.21.5", "2.21.5", id="3.1-sglang"),
        pytest.param("[2025-07-01 12:00:10 TP0] sglang is using nccl==2.21.", "2.21.0", id="3.1-sglang-dot-0-patch"),
        pytest.param(
            "[2025-07-01 12:00:10 TP0] sgl-diffusion is using nccl==2.27.3", "2.27.3", id="3.1-diffusion-0.5.5"
        ),
        pytest.param(
            "[2025-07-01 12:00:10 TP0] sglang-diffusion is using nccl==2.27.3", "2.27.3", id="3.1-diffusion-0.5.6+"
        ),
        pytest.param(
            "[2025-07-01 12:00:10 TP0] Found nccl from library libnccl.so.2", None, id="3.1-found-nccl-not-a-version"
        ),
        pytest.param("INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5", "2.21.5", id="3.2-vllm-0.5"),
        pytest.param(
            "(VllmWorkerProcess pid=532) INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5",
            "2.21.5",
            id="3.2-vllm-worker",
        ),
        pytest.param("INFO 09-24 20:46:10 [pynccl.py:70] vLLM is using nccl==2.27.3", "2.27.3", id="3.2-vllm-0.8+"),
        pytest.param(
            "(Worker pid=4155524) INFO 08-20 16:42:21 [pynccl.py:113] vLLM is using nccl==2.28.9",
            "2.28.9",
            id="3.2-vllm-worker-0.11",
        ),
        pytest.param("NCCL version 2.21.5+cuda12.4", "2.21.5", id="3.3-bare-le-2.21"),
        pytest.param("(WorkerDict pid=3614951) NCCL version 2.21.5+cuda12.4", "2.21.5", id="3.3-bare-under-ray"),
        pytest.param("gpu-a:2417:2417 [0] NCCL INFO NCCL version 2.22.3+cuda12.2", "2.22.3", id="3.3-info-ge-2.22"),
        pytest.param("gpu-a:2417:2417 [0] NCCL INFO NCCL git version master 3d6c9b6", None, id="3.3-git-version-2.29"),
        pytest.param("gpu-a:2417:2417 [0] NCCL INFO cudaDriverVersion 12080", None, id="3.3-cuda-driver-decoy"),
        pytest.param(
            "[2025-06-01 12:00:00] gpu-a:1:2 [0] misc/socket.cc:50 NCCL WARN Connect failed", None, id="3.3-warn-2.26"
        ),
    ],
)
def test_3_nccl_shapes(tmp_path: Path, line: str, version: str | None) -> None:
    assert nccl_version(line) == version
    parsed = parse_text(tmp_path, f"{SERVER_ARGS}\n{line}\n")
    run = one_run(parsed)
    assert run.nccl_versions == ([version] if version else [])


# --------------------------------------------------------------------------- §4 server_args


@pytest.mark.parametrize(
    "text,fields",
    [
        pytest.param(
            "server_args=ServerArgs(model_path='meta-llama/Llama-2-7b', tp_size=2, dp_size=1)",
            {"model_path": "meta-llama/Llama-2-7b", "tp_size": 2},
            id="4-0.2-0.4.1-launch_server",
        ),
        pytest.param(
            "server_args=ServerArgs(model_path='Qwen/Qwen3-8B', cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=256, bs=[1, 2, 4], tc_compiler='eager'), prefill=None), custom_sigquit_handler=<function f at 0x7f00>)",
            {
                "cuda_graph_config": {
                    "decode": {"backend": "full", "max_bs": 256, "bs": [1, 2, 4], "tc_compiler": "eager"},
                    "prefill": None,
                }
            },
            id="4-0.4.2-0.5.18-dataclass-repr",
        ),
        pytest.param(
            "server_args={'model_path': 'Qwen/Qwen3-8B', 'tp_size': 8, 'cuda_graph_config': {'decode': {'max_bs': 256}}}",
            {"tp_size": 8, "cuda_graph_config": {"decode": {"max_bs": 256}}},
            id="4-0.5.19-0.5.21-dict",
        ),
        pytest.param(
            "server_args={'model_path': 'Qwen/Qwen3-8B', 'watermark_secret_key': '<redacted>'}",
            {"watermark_secret_key": "<redacted>"},
            id="4-0.5.22-0.5.23-redacted",
        ),
    ],
)
def test_4_server_args_forms(tmp_path: Path, text: str, fields: dict) -> None:
    parsed = parse_text(tmp_path, f"[2026-01-01 10:00:00] {text}\n")
    run = one_run(parsed)
    for key, value in fields.items():
        assert run.config[key] == value
    assert parsed.diagnostics == []


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param(
            "model_path='m', tokenizer_path='m', served_model_name='s', tp_size=8, dp_size=1, dtype='auto', quantization=None, kv_cache_dtype='auto', mem_fraction_static=0.88, max_running_requests=None, chunked_prefill_size=8192, context_length=None, disable_cuda_graph=False, disable_radix_cache=False, enable_torch_compile=False, random_seed=42, enable_mixed_chunk=False, log_level='info'",
            id="4-fields-all",
        ),
        pytest.param("attention_backend='flashinfer', sampling_backend='flashinfer'", id="4-fields-0.3.2+"),
        pytest.param("enable_dp_attention=True", id="4-fields-0.3.6+-dp-attention"),
        pytest.param("cuda_graph_max_bs=160", id="4-fields-0.3.6-0.5.13-cuda_graph_max_bs"),
        pytest.param("cuda_graph_bs=[1, 2, 4, 8]", id="4-fields-0.4.2-0.5.13-cuda_graph_bs"),
        pytest.param("ep_size=8", id="4-fields-0.4.1+-ep_size"),
        pytest.param("pp_size=2", id="4-fields-0.4.7+-pp_size"),
        pytest.param(
            "speculative_algorithm='EAGLE3', speculative_draft_model_path='d', speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4",
            id="4-fields-0.4.2+-speculative",
        ),
        pytest.param("speculative_accept_threshold_single=1.0", id="4-fields-0.4.4+-threshold"),
        pytest.param("moe_runner_backend='auto', moe_a2a_backend='deepep'", id="4-fields-0.5.1+-moe"),
        pytest.param(
            "enable_piecewise_cuda_graph=False, piecewise_cuda_graph_max_tokens=4096",
            id="4-fields-0.5.4-0.5.9-piecewise",
        ),
        pytest.param(
            "disable_piecewise_cuda_graph=False, enforce_piecewise_cuda_graph=False, piecewise_cuda_graph_max_tokens=4096, piecewise_cuda_graph_tokens=[4, 8], piecewise_cuda_graph_compiler='eager'",
            id="4-fields-0.5.10-0.5.13-piecewise",
        ),
        pytest.param(
            "cuda_graph_config=None, cuda_graph_backend_decode='full', cuda_graph_max_bs_decode=256, cuda_graph_bs_decode=[1, 2], cuda_graph_tc_compiler='eager', disable_decode_cuda_graph=False, disable_prefill_cuda_graph=True",
            id="4-fields-0.5.14+-cuda-graph-config",
        ),
        pytest.param("decode_log_interval=40", id="4-fields-0.3.6+-decode_log_interval"),
        pytest.param(
            "speculative_algorithm=None, max_total_tokens=None, json_model_override_args='{}', mem=inf, x=1e-05",
            id="4-values-none-inf-string-json",
        ),
    ],
)
def test_4_field_availability_rows_parse_typed(tmp_path: Path, fields: str) -> None:
    import ast

    want = {}
    for item in ast.parse(f"f({fields.replace('=inf', '=float(1)')})", mode="eval").body.keywords:
        want[item.arg] = float("inf") if fields.find(f"{item.arg}=inf") >= 0 else ast.literal_eval(item.value)
    parsed = parse_text(tmp_path, f"[2026-01-01 10:00:00] server_args=ServerArgs({fields})\n")
    assert one_run(parsed).config == want and parsed.diagnostics == []


# --------------------------------------------------------------------------- §5 run-phase markers


@pytest.mark.parametrize(
    "message",
    [
        "Init torch distributed begin.",
        "Init torch distributed ends. mem usage=0.41 GB",
        "Init torch distributed ends. elapsed=1.23 s, mem usage=0.56 GB",
        "Load weight begin. avail mem=78.53 GB",
        "Load weight end. type=LlamaForCausalLM, dtype=torch.float16, avail mem=71.48 GB",
        "Load weight end. type=LlamaForCausalLM, dtype=torch.float16, avail mem=71.48 GB, mem usage=8.41 GB.",
        "Load weight end. elapsed=12.00 s, type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=70.12 GB, mem usage=8.41 GB.",
        "Load weight end. elapsed=226.29 s, type=DeepseekV3ForCausalLM, quant=fp8, fmt=e4m3, avail mem=52.10 GB, mem usage=87.31 GB.",
        "KV Cache is allocated. #tokens: 452000, K size: 31.04 GB, V size: 31.04 GB",
        "KV Cache is allocated. #tokens: 655360, KV size: 42.95 GB",
        "Memory pool end. avail mem=7.80 GB",
        "Capture cuda graph begin. This can take up to several minutes.",
        "Capture cuda graph end. Time elapsed: 6.80 s",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=7.20 GB",
        "Capture cuda graph end. Time elapsed: 7.93 s. avail mem=21.44 GB. mem usage=0.87 GB.",
        "Capture cuda graph end. Time elapsed: 6.80 s. mem usage=0.60 GB. avail mem=6.60 GB.",
        "Capture cpu graph begin. This can take up to several minutes. avail mem=7.20 GB",
        "Capture npu graph begin. This can take up to several minutes. avail mem=7.20 GB",
        "Capture piecewise CUDA graph begin. avail mem=30.00 GB",
        "Capture piecewise CUDA graph end. Time elapsed: 9.10 s. mem usage=1.10 GB. avail mem=28.90 GB.",
        "Capture target decode CUDA graph begin. backend=full, num_tokens_per_bs=1, bs=[1, 2, 4], avail mem=8.90 GB",
        "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, bs=[1, 2], avail mem=8.90 GB",
        "Capture target prefill CUDA graph begin. backend=tc_piecewise, num_tokens=[4096, 8192], avail mem=8.90 GB",
        "Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=37.50 s, mem usage=2.10 GB, avail mem=6.80 GB.",
        "Capture draft cuda graph begin. This can take up to several minutes. avail mem=21.40 GB",
        "Capture draft extend CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1], avail mem=6.00 GB",
        "max_total_num_tokens=246183, max_prefill_tokens=16384, max_running_requests=4095, context_len=4096",
        "max_total_num_tokens=382109, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2049, context_len=131072",
        "max_total_num_tokens=452000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=40960, available_gpu_mem=6.60 GB",
        "max_total_num_tokens=1000, chunked_prefill_size=-1, max_prefill_tokens=16384, max_running_requests=64, context_len=4096, available_cpu_mem=120.00 GB",
        "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
        "Start of pd disaggregation warmup ...",
        "The server is fired up and ready to roll!",
        "Attention backend not set. Use fa3 backend by default.",
        "Global server args updated! global_server_args_dict={'attention_backend': 'fa3'}",
    ],
)
def test_5_run_phase_markers_stay_in_the_run(tmp_path: Path, message: str) -> None:
    decode = "[2026-01-01 10:00:09 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 5.00, #queue-req: 0"
    parsed = parse_text(tmp_path, f"{SERVER_ARGS}\n[2026-01-01 10:00:05 TP0] {message}\n{decode}\n")
    run = one_run(parsed)
    assert (run.first_line, run.last_line) == (1, 3) and run.config == {"model_path": "m", "tp_size": 1}
    assert list(run.series["decode_throughput"]) == [5.0] and parsed.diagnostics == []


# --------------------------------------------------------------------------- §6 benchmark clients


@pytest.mark.parametrize(
    "label,name,unit",
    [
        pytest.param("Successful requests", "successful_requests", "requests", id="6.1-all-successful"),
        pytest.param("Benchmark duration (s)", "duration", "s", id="6.1-all-duration"),
        pytest.param("Total input tokens", "total_input_tokens", "tokens", id="6.1-all-input-tokens"),
        pytest.param("Total generated tokens", "total_output_tokens", "tokens", id="6.1-all-generated"),
        pytest.param(
            "Total generated tokens (retokenized)",
            "total_output_tokens_retokenized",
            "tokens",
            id="6.1-all-retokenized",
        ),
        pytest.param("Request throughput (req/s)", "request_throughput", "req/s", id="6.1-all-request-throughput"),
        pytest.param("Input token throughput (tok/s)", "input_throughput", "tok/s", id="6.1-all-input-throughput"),
        pytest.param("Output token throughput (tok/s)", "output_throughput", "tok/s", id="6.1-all-output-throughput"),
        pytest.param("Total token throughput (tok/s)", "total_throughput", "tok/s", id="6.1-0.3.6+-total"),
        pytest.param("Concurrency", "concurrency", "requests", id="6.1-0.4.2+-concurrency"),
        pytest.param("Accept length", "accept_length", "tokens", id="6.1-0.4.4+-accept-length"),
        pytest.param("Total input text tokens", "total_input_text_tokens", "tokens", id="6.1-0.5.4+-text"),
        pytest.param("Total input vision tokens", "total_input_vision_tokens", "tokens", id="6.1-0.5.4+-vision"),
        pytest.param("Peak output token throughput (tok/s)", "peak_output_throughput", "tok/s", id="6.1-0.5.6+-peak"),
        pytest.param(
            "Peak concurrent requests", "peak_concurrent_requests", "requests", id="6.1-0.5.6+-peak-concurrent"
        ),
        pytest.param("Mean TPOT (ms)", "tpot_mean", "ms", id="6.1-tpot-section"),
        pytest.param("P95 ITL (ms)", "itl_p95", "ms", id="6.1-0.4.4+-p95-itl"),
        pytest.param("Max ITL (ms)", "itl_max", "ms", id="6.1-0.4.4+-max-itl"),
        pytest.param("P90 E2E Latency (ms)", "e2e_latency_p90", "ms", id="6.1-0.5.8+-p90-e2e"),
        pytest.param("P99 E2E Latency (ms)", "e2e_latency_p99", "ms", id="6.1-0.5.8+-p99-e2e"),
        pytest.param("P95 TTFT (ms)", "ttft_p95", "ms", id="6.1-0.5.14+-p95"),
        pytest.param("P90 TPOT (ms)", "tpot_p90", "ms", id="6.1-0.5.14+-p90"),
        pytest.param("Last generation throughput (tok/s)", "last_gen_throughput", "tok/s", id="6.1-offline-throughput"),
        pytest.param("Request goodput (req/s)", "request_goodput", "req/s", id="6.4-goodput"),
        pytest.param("Total Token throughput (tok/s)", "total_throughput", "tok/s", id="6.4-capital-T-le-0.11"),
        pytest.param("Failed requests", "failed_requests", "requests", id="6.4-0.18-failed"),
        pytest.param("RTFx (Inverse Real-Time Factor)", "rtfx", "", id="6.4-0.18-rtfx"),
        pytest.param("Acceptance rate (%)", "acceptance_rate", "%", id="6.4-0.18-acceptance-rate"),
        pytest.param("Acceptance length", "accept_length", "tokens", id="6.4-0.18-acceptance-length"),
        pytest.param("Drafts", "drafts", "drafts", id="6.4-0.18-drafts"),
        pytest.param("Draft tokens", "draft_tokens", "tokens", id="6.4-0.18-draft-tokens"),
        pytest.param("Accepted tokens", "accepted_tokens", "tokens", id="6.4-0.18-accepted-tokens"),
        pytest.param("Position 2", "acceptance_position_2", "%", id="6.4-0.33-per-position"),
        pytest.param("Input throughput (inputs/s)", "input_request_throughput", "inputs/s", id="6.4-0.33-embeddings"),
        pytest.param("Mean E2EL (ms)", "e2e_latency_mean", "ms", id="6.4-e2el"),
        pytest.param("P99.9 TTFT (ms)", "ttft_p99_9", "ms", id="6.4-fractional-percentile"),
    ],
)
def test_6_bench_row_labels(tmp_path: Path, label: str, name: str, unit: str) -> None:
    assert metric_for_label(label) == (name, unit)
    block = (
        "\n".join(
            [
                "============ Serving Benchmark Result ============",
                "{:<40} {:<10}".format(label + ":", "12.50"),
                "=" * 50,
            ]
        )
        + "\n"
    )
    run = one_run(parse_text(tmp_path, block), "bench-serving")
    assert list(run.series[name]) == [12.5] and run.units[name] == unit


@pytest.mark.parametrize(
    "label,value,key,want",
    [
        pytest.param("Backend:", "sglang", "backend", "sglang", id="6.1-backend"),
        pytest.param("Traffic request rate:", "inf", "request_rate", float("inf"), id="6.1-rate-inf"),
        pytest.param("Traffic request rate:", "trace", "request_rate", "trace", id="6.1-0.5.2x-rate-trace"),
        pytest.param("Max reqeuest concurrency:", "not set", "max_concurrency", None, id="6.1-0.4.0-0.4.6-typo"),
        pytest.param("Max request concurrency:", "16", "max_concurrency", 16, id="6.1-0.4.7+-max-concurrency"),
        pytest.param("Maximum request concurrency:", "64", "max_concurrency", 64, id="6.4-0.10.2-maximum"),
        pytest.param("Request rate configured (RPS):", "20.00", "request_rate", 20.0, id="6.4-0.10.2-rate-configured"),
    ],
)
def test_6_bench_setting_rows_go_to_config(tmp_path: Path, label: str, value: str, key: str, want) -> None:
    block = (
        "\n".join(
            [
                "============ Serving Benchmark Result ============",
                f"{label:<40} {value:<10}",
                "{:<40} {:<10}".format("Output token throughput (tok/s):", "100.00"),
                "=" * 50,
            ]
        )
        + "\n"
    )
    run = one_run(parse_text(tmp_path, block), "bench-serving")
    assert run.config[key] == want and list(run.series["output_throughput"]) == [100.0]


def test_6_1_section_titles_of_every_release(tmp_path: Path) -> None:
    rows = ["============ Serving Benchmark Result ============"]
    for title, label in (
        ("End-to-End Latency", "Mean E2E Latency (ms):"),
        ("Time to First Token", "Mean TTFT (ms):"),
        ("Time per Output Token (excl. 1st token)", "Mean TPOT (ms):"),
        ("Inter-token Latency", "Mean ITL (ms):"),
        ("Inter-Token Latency", "Median ITL (ms):"),
        ("End-to-end Latency", "Median E2EL (ms):"),
        ("Cache Hit Details", "Cache hit rate (%):"),
    ):
        rows.append("{s:{c}^{n}}".format(s=title, n=50, c="-"))
        rows.append(f"{label:<40} {1.5:<10.2f}")
    rows.append("=" * 50)
    run = one_run(parse_text(tmp_path, "\n".join(rows) + "\n"), "bench-serving")
    assert sorted(run.series) == [
        "cache_hit_rate",
        "e2e_latency_mean",
        "e2e_latency_median",
        "itl_mean",
        "itl_median",
        "tpot_mean",
        "ttft_mean",
    ]


@pytest.mark.parametrize(
    "lines,series,config",
    [
        pytest.param(
            [
                "Prefill. latency: 0.03457 s, throughput:  29629.63 token/s",
                "Decode.  latency: 0.00712 s, throughput:    140.38 token/s",
                "Decode.  median latency: 0.00701 s, median throughput:    142.65 token/s",
                "Total. latency:  1.234 s, throughput:    935.60 token/s",
            ],
            {"prefill_latency": 0.03457, "decode_median_throughput": 142.65, "total_latency": 1.234},
            {},
            id="6.2-le-0.4.5-per-step",
        ),
        pytest.param(
            [
                "Prefill. latency: 0.03457 s, throughput:  29629.63 token/s",
                "Decode 0. Batch size: 1, latency: 0.00712 s, throughput:    140.38 token/s",
                "Decode.  median latency: 0.00701 s, median throughput:    142.65 token/s",
                "Total. latency:  1.234 s, throughput:    935.60 token/s",
            ],
            {"prefill_throughput": 29629.63, "decode_median_latency": 0.00701, "total_throughput": 935.6},
            {"batch_size": 1},
            id="6.2-0.4.6+-batch-size",
        ),
    ],
)
def test_6_2_bench_one_batch(tmp_path: Path, lines: list[str], series: dict, config: dict) -> None:
    run = one_run(parse_text(tmp_path, "\n".join(lines) + "\n"), "bench-one-batch")
    for name, value in series.items():
        assert list(run.series[name]) == [value]
    assert run.config == config and len(run.samples["decode"]) == 1


@pytest.mark.parametrize(
    "lines,config,series",
    [
        pytest.param(
            [
                "batch size: 16",
                "latency: 2.10 s",
                "output throughput: 1950.48 token/s",
                "(input + output) throughput: 9752.38 token/s",
            ],
            {"batch_size": 16},
            {"latency": 2.1, "output_throughput": 1950.48, "total_throughput": 9752.38},
            id="6.3-0.4.3",
        ),
        pytest.param(
            [
                "batch size: 16",
                "input_len: 1024",
                "latency: 2.10 s",
                "ttft: 0.25 s",
                "last generation throughput: 2100.00 tok/s",
                "input throughput: 65536.00 tok/s",
                "output throughput: 2214.05 tok/s",
            ],
            {"batch_size": 16, "input_len": 1024},
            {
                "latency": 2.1,
                "ttft": 0.25,
                "last_gen_throughput": 2100.0,
                "input_throughput": 65536.0,
                "output_throughput": 2214.05,
            },
            id="6.3-0.4.9-0.5.3",
        ),
        pytest.param(
            [
                "batch size: 16",
                "input_len: 1024",
                "output_len: 1",
                "latency: 0.30 s",
                "input throughput: 65536.00 tok/s",
                "last_ttft: 0.25 s",
                "last generation throughput: -1.00 tok/s",
            ],
            {"batch_size": 16, "input_len": 1024, "output_len": 1},
            {"latency": 0.3, "input_throughput": 65536.0, "last_ttft": 0.25, "last_gen_throughput": -1.0},
            id="6.3-0.5.8+-output-len-1",
        ),
        pytest.param(
            [
                "batch size: 1",
                "input_len: 1024",
                "output_len: 256",
                "latency: 1.02 s",
                "input throughput: 20897.96 tok/s",
                "output throughput: 263.92 tok/s",
                "last_ttft: 0.05 s",
                "last generation throughput: 281.40 tok/s",
                "acc_length: 3.05 ",
                "cache hit rate: 0.1250",
            ],
            {"batch_size": 1, "input_len": 1024, "output_len": 256},
            {"accept_length": 3.05, "cache_hit_rate": 0.125, "last_gen_throughput": 281.4},
            id="6.3-0.5.8+-spec",
        ),
    ],
)
def test_6_3_bench_one_batch_server(tmp_path: Path, lines: list[str], config: dict, series: dict) -> None:
    run = one_run(parse_text(tmp_path, "\n".join(lines) + "\n"), "bench-one-batch-server")
    assert run.config == config
    for name, value in series.items():
        assert list(run.series[name]) == [value], name


# --------------------------------------------------------------------------- §7 vLLM


THROUGHPUT = (
    "Avg prompt throughput: 1234.5 tokens/s, Avg generation throughput: 456.8 tokens/s, Running: 8 reqs, "
    "Waiting: 0 reqs, GPU KV cache usage: 12.3%, Prefix cache hit rate: 50.0%"
)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("INFO 05-06 12:00:00 metrics.py:111] " + THROUGHPUT, id="7.1-0.5.5"),
        pytest.param("PREFIX INFO 05-06 12:00:00 metrics.py:111] " + THROUGHPUT, id="7.1-0.6-0.7.3-prefix-no-bracket"),
        pytest.param("INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT, id="7.1-0.8-0.9.2-bracketed"),
        pytest.param("DEBUG 05-06 12:00:00 [v1/metrics/loggers.py:111] " + THROUGHPUT, id="7.1-0.10.2-0.25-fileinfo"),
        pytest.param(
            "(MainProcess pid=7) INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT, id="7.1-0.33-tag-in-format"
        ),
        pytest.param(
            "(VllmWorkerProcess pid=532) INFO 05-06 12:00:00 metrics.py:111] " + THROUGHPUT, id="7.1-tag-V0-worker"
        ),
        pytest.param(
            "\x1b[1;36m(EngineCore pid=1)\x1b[0;0m INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT,
            id="7.1-tag-0.8.0-ansi",
        ),
        pytest.param(
            "(VllmWorker rank=3 pid=9) INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT,
            id="7.1-tag-0.8.0-worker-rank",
        ),
        pytest.param("(EngineCore_0 pid=9) INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT, id="7.1-tag-0.8.5"),
        pytest.param(
            "(Worker_DP0_PP1_TP2_EP3 pid=9) INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT,
            id="7.1-tag-0.10.2-worker",
        ),
        pytest.param(
            "(Worker_DP0_PCP1_DCP1_TP0 pid=9) INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT,
            id="7.1-tag-0.18-pcp-dcp",
        ),
        pytest.param(
            "(RayWorkerWrapper pid=9, ip=10.0.0.2) INFO 05-06 12:00:00 [loggers.py:111] " + THROUGHPUT, id="7.1-tag-ray"
        ),
    ],
)
def test_7_1_vllm_logger_formats(tmp_path: Path, line: str) -> None:
    parsed = parse_text(tmp_path, line + "\n", mtime=datetime(2026, 5, 6, 12, 5))
    run = one_run(parsed, "vllm-server")
    assert list(run.series["decode_throughput"]) == [456.8] and list(run.series["prompt_throughput"]) == [1234.5]
    assert run.start == datetime(2026, 5, 6, 12, 0) and run.start_text == "05-06 12:00:00"


@pytest.mark.parametrize(
    "message,fields",
    [
        pytest.param(
            "Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 87.4 tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 1 reqs, GPU KV cache usage: 1.2%, CPU KV cache usage: 0.0%.",
            {"gen_throughput": 87.4, "swapped": 0, "pending": 1, "cpu_kv_cache_usage": 0.0},
            id="7.2-V0",
        ),
        pytest.param(
            "Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 87.4 tokens/s, Running: 4 reqs, Waiting: 1 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 3.5%",
            {"waiting": 1, "prefix_cache_hit_rate": 3.5},
            id="7.2-V1-0.7.3-0.8.0",
        ),
        pytest.param("Engine 000: " + THROUGHPUT, {"engine": 0, "gen_throughput": 456.8}, id="7.2-V1-0.8.5-0.11"),
        pytest.param(
            "Engine 001: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, Deferred: 1 reqs, Preemptions: 2, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%, Corrupted: 0 reqs, External prefix cache hit rate: 1.5%, MM cache hit rate: 2.5%",
            {
                "engine": 1,
                "deferred": 1,
                "preemptions": 2,
                "corrupted": 0,
                "external_prefix_cache_hit_rate": 1.5,
                "mm_cache_hit_rate": 2.5,
            },
            id="7.2-V1-0.18-0.25",
        ),
        pytest.param(
            "4 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%",
            {"engines_aggregated": 4},
            id="7.2-V1-dp-aggregated",
        ),
        pytest.param(
            "Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, KV fetch: 1 waiting to start, 2 in progress, 3 completed waiting, XPU KV cache usage: 1.0%",
            {"kv_fetch": "1 waiting to start, 2 in progress, 3 completed waiting", "xpu_kv_cache_usage": 1.0},
            id="7.2-V1-0.33",
        ),
    ],
)
def test_7_2_throughput_lines(message: str, fields: dict) -> None:
    got = throughput_fields(message)
    assert got is not None
    for key, value in fields.items():
        assert got[key] == value, key


def test_7_2_iteration_line_is_not_a_throughput_line() -> None:
    message = (
        "Engine 000: Iteration(5321): 0 context requests, 0 context tokens, 64 generation requests, "
        "64 generation tokens, iteration elapsed time: 21.37 ms, GPU KV cache usage: 40.3%"
    )
    assert throughput_fields(message) is None


@pytest.mark.parametrize(
    "message,version,accept_len,converted",
    [
        pytest.param(
            "Speculative metrics: Draft acceptance rate: 0.653, System efficiency: 0.570, Number of speculative tokens: 3, Number of accepted tokens: 19590, Number of draft tokens: 30000, Number of emitted tokens: 22800.",
            None,
            2.28,
            None,
            id="7.3-V0",
        ),
        pytest.param(
            "SpecDecoding metrics: Draft acceptance rate: 62.0%, Mean acceptance length: 1.86, Accepted: 1860 tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.790, 0.620, 0.450",
            None,
            2.86,
            "0.8.5",
            id="7.3-0.8.5-excludes-bonus-by-numbers",
        ),
        pytest.param(
            "SpecDecoding metrics: Draft acceptance rate: 62.0%, Mean acceptance length: 1.86, Accepted: 1860 tokens, Drafted: 3000 tokens, Per-position acceptance rate: ",
            "0.8.5",
            2.86,
            "0.8.5",
            id="7.3-0.8.5-excludes-bonus-by-version",
        ),
        pytest.param(
            "SpecDecoding metrics: Draft acceptance rate: 62.0%, Mean acceptance length: 2.86, Accepted: 1860 tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.790, 0.620, 0.450",
            None,
            2.86,
            None,
            id="7.3-0.9.2-includes-bonus",
        ),
        pytest.param(
            "SpecDecoding metrics: Mean acceptance length: 2.95, Accepted throughput: 123.45 tokens/s, Drafted throughput: 190.00 tokens/s, Accepted: 1234 tokens, Drafted: 1896 tokens, Per-position acceptance rate: 0.800, 0.650, 0.500, Avg Draft acceptance rate: 65.1%",
            None,
            2.95,
            None,
            id="7.3-0.10.2-0.33",
        ),
    ],
)
def test_7_3_spec_decoding(message: str, version: str | None, accept_len: float, converted: str | None) -> None:
    fields, note = spec_fields(message, version)
    assert fields["accept_len"] == pytest.approx(accept_len) and note == converted


@pytest.mark.parametrize(
    "message,config",
    [
        pytest.param(
            "vLLM API server version 0.6.6.post1", {"vllm_version": "0.6.6.post1"}, id="7.4-api-server-version"
        ),
        pytest.param(
            "vLLM server version 0.18.0, serving model Qwen/Qwen3-8B",
            {"vllm_version": "0.18.0", "model_path": "Qwen/Qwen3-8B"},
            id="7.4-server-version-0.18+",
        ),
        pytest.param(
            "args: Namespace(model='m', tensor_parallel_size=4)",
            {"model_path": "m", "tp_size": 4},
            id="7.4-args-namespace",
        ),
        pytest.param(
            "non-default args: {'model': 'm', 'pipeline_parallel_size': 2}", {"pp_size": 2}, id="7.4-non-default-args"
        ),
        pytest.param(
            "Initializing an LLM engine (v0.5.5) with config: model='m', speculative_config=None, tokenizer='m', tensor_parallel_size=2, enable_prefix_caching=False)",
            {"vllm_version": "0.5.5", "tp_size": 2, "enable_prefix_caching": False},
            id="7.4-engine-0.5.5",
        ),
        pytest.param(
            "Initializing an LLM engine (v0.6.6.post1) with config: model='m', data_parallel_size=2, use_cached_outputs=True, ",
            {"dp_size": 2, "use_cached_outputs": True},
            id="7.4-engine-0.6-V0",
        ),
        pytest.param(
            "Initializing a V0 LLM engine (v0.8.0) with config: model='m', dtype=torch.float16",
            {"dtype": "torch.float16"},
            id="7.4-engine-V0-0.8",
        ),
        pytest.param(
            "Initializing a V1 LLM engine (v0.10.2) with config: model='m', speculative_config=SpeculativeConfig(method='eagle3', model='d', num_spec_tokens=3), served_model_name=m/x, compilation_config={\"level\":3,\"use_inductor\":false}",
            {
                "speculative_config": {"method": "eagle3", "model": "d", "num_spec_tokens": 3},
                "served_model_name": "m/x",
                "compilation_config": {"level": 3, "use_inductor": False},
            },
            id="7.4-engine-V1",
        ),
    ],
)
def test_7_4_config_and_version_lines(tmp_path: Path, message: str, config: dict) -> None:
    text = f"INFO 05-06 12:00:00 [x.py:1] {message}\nINFO 05-06 12:00:10 [loggers.py:1] {THROUGHPUT}\n"
    run = one_run(parse_text(tmp_path, text, mtime=datetime(2026, 5, 6, 13, 0)), "vllm-server")
    for key, value in config.items():
        assert run.config[key] == value, key


@pytest.mark.parametrize(
    "message",
    [
        "Loading weights took 12.34 seconds",
        "Model loading took 16.0621 GiB and 6.412051 seconds",
        "Model loading took 16.06 GiB memory and 6.412051 seconds",
        "# GPU blocks: 27912, # CPU blocks: 4096",
        "GPU KV cache size: 404,224 tokens",
        "Maximum concurrency for 131,072 tokens per request: 3.08x",
        "Graph capturing finished in 21 secs, took 0.58 GiB",
        "init engine (profile, create kv cache, warmup model) took 98.31 s",
        "Starting vLLM API server 0 on http://0.0.0.0:8000",
        "Available routes are:",
    ],
)
def test_7_4_phase_lines_stay_in_the_run(tmp_path: Path, message: str) -> None:
    text = (
        f"INFO 05-06 12:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        f"INFO 05-06 12:00:05 [x.py:1] {message}\nINFO 05-06 12:00:10 [loggers.py:1] Engine 000: {THROUGHPUT}\n"
        '(APIServer pid=1) INFO:     127.0.0.1:54321 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    )
    parsed = parse_text(tmp_path, text, mtime=datetime(2026, 5, 6, 13, 0))
    run = one_run(parsed, "vllm-server")
    assert (run.first_line, run.last_line) == (1, 4) and list(run.series["decode_throughput"]) == [456.8]


def test_7_4_engine_config_values() -> None:
    config = engine_config(
        "model='m', tokenizer_mode=auto, load_format=LoadFormat.AUTO, seed=0, quantization=None, "
        "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar'), "
        "pooler_config=None, served_model_name=org/model-7b, max_seq_len=8192"
    )
    assert config == {
        "model": "m",
        "tokenizer_mode": "auto",
        "load_format": "LoadFormat.AUTO",
        "seed": 0,
        "quantization": None,
        "decoding_config": {"guided_decoding_backend": "xgrammar"},
        "pooler_config": None,
        "served_model_name": "org/model-7b",
        "max_seq_len": 8192,
    }


def test_7_vllm_log_inside_sglang_le_0_4_1_makes_no_vllm_run(tmp_path: Path) -> None:
    text = (
        "\n".join(
            [
                "[2024-09-02 08:00:58] server_args=ServerArgs(model_path='m', tp_size=2)",
                "INFO 09-02 08:01:03 pynccl.py:63] vLLM is using nccl==2.20.5",
                "INFO 09-02 08:01:03 custom_all_reduce.py:203] Registering 2275 cuda graph addresses",
                "[2024-09-02 08:02:10 TP0] Decode batch. #running-req: 8, #token: 1234, token usage: 0.01, gen throughput (token/s): 512.33, #queue-req: 0",
            ]
        )
        + "\n"
    )
    parsed = parse_text(tmp_path, text)
    assert [r.kind for r in parsed.runs] == ["sglang-server"] and parsed.runs[0].nccl_versions == ["2.20.5"]
