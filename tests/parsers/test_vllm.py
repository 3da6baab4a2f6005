"""parsers/vllm.py: engine and args lines hard-wrapped in a paste, joined back before they are read."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.parsers import VLLMLogParser

HEADER = "INFO 04-04 16:30:36 [core.py:61] Initializing a V1 LLM engine (v0.8.3) with config: "


def parse(*lines: str):
    parser = VLLMLogParser("test.log")
    parser.feed_all(enumerate(lines, 1))
    return parser.finish()


def test_a_break_right_before_the_equals_sign_is_joined() -> None:
    # The shape pasted in https://github.com/containers/ramalama/issues/912: "chunked_prefill_enabled" / "=True, ..."
    first = HEADER + "model='google/gemma-3-1b-it', seed=None, enable_prefix_caching=True, chunked_prefill_enabled"
    runs, _ = parse(first, "=True, use_async_output_proc=True, pooler_config=None")
    (run,) = runs
    assert (run.first_line, run.last_line) == (1, 2)
    assert run.config["chunked_prefill_enabled"] is True
    assert run.config["use_async_output_proc"] is True
    assert run.config["model_path"] == "google/gemma-3-1b-it"


def test_a_break_inside_a_value_is_joined() -> None:
    first = HEADER + "model='/models/Qwen3-8B', tokenizer='/models/Qw"
    runs, _ = parse(first, "en3-8B', seed=0, served_model_name=qwen3")
    assert runs[0].config["tokenizer"] == "/models/Qwen3-8B"
    assert runs[0].config["seed"] == 0
    assert runs[0].config["served_model_name"] == "qwen3"


def test_pieces_as_wide_as_the_first_continue_it_whatever_they_hold() -> None:
    """A line wrapped three times at one width: the middle piece, inside a JSON list, has no
    ``key=`` of its own but fills the width, so it continues the line; the last piece ends it."""
    line = (
        HEADER
        + "model='m', seed=0, compilation_config="
        + '{"capture_sizes":['
        + ",".join(map(str, range(512, 0, -8)))
        + "]}"
    )
    width = 120
    pieces = [line[i : i + width] for i in range(0, len(line), width)]
    assert len(pieces) == 4 and "=" not in pieces[2]
    runs, _ = parse(
        *pieces,
        "INFO 04-04 16:31:00 [loggers.py:111] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs",
    )
    (run,) = runs
    assert run.config["compilation_config"]["capture_sizes"] == list(range(512, 0, -8))
    assert list(run.series["decode_throughput"]) == [2.0]


def test_lines_that_do_not_read_as_the_rest_of_the_list_are_not_joined() -> None:
    first = HEADER + "model='/models/Qwen3-8B', seed=0, served_model_name=/models/Qwen3-8B"
    for after in (
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/vllm/engine/core.py", line 61, in __init__',
        "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]",
        'INFO:     127.0.0.1:40822 - "POST /v1/completions HTTP/1.1" 200 OK',
    ):
        runs, _ = parse(first, after)
        assert runs[0].config["served_model_name"] == "/models/Qwen3-8B", after
        assert runs[0].config["seed"] == 0, after


def test_a_wrapped_args_namespace_is_joined_while_it_is_open() -> None:
    first = (
        "INFO 02-06 22:00:49 api_server.py:839] args: Namespace(subparser='serve', model_tag='/m/DeepSeek-R1', host=No"
    )
    runs, diagnostics = parse(first, "ne, port=8000, tensor_parallel_size=8)")
    assert runs[0].config["port"] == 8000 and runs[0].config["host"] is None
    assert runs[0].config["tp_size"] == 8
    assert not [d for d in diagnostics if "vLLM args" in d.message]
    # Cut, not wrapped (the next line has a header of its own): what was complete is kept, and said.
    runs, diagnostics = parse(first, "INFO 02-06 22:00:50 api_server.py:840] Started engine process with PID 7")
    assert runs[0].config["model_tag"] == "/m/DeepSeek-R1" and "port" not in runs[0].config
    assert [d.line for d in diagnostics if "vLLM args" in d.message] == [1]


ENGINE = (
    HEADER + "model='/models/Qwen3-8B', speculative_config=None, tokenizer='/models/Qwen3-8B', dtype=torch.bfloat16, "
    "max_seq_len=40960, tensor_parallel_size=2, kv_cache_dtype=auto,  device_config=cuda, "
    "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar', reasoning_backend=None), seed=0, "
    "served_model_name=/models/Qwen3-8B, enable_prefix_caching=True, "
    'compilation_config={"splitting_ops":[],"compile_sizes":[],"cudagraph_capture_sizes":[8,4,2,1],"max_capture_size":8}'
)


@settings(max_examples=200, deadline=None)
@given(width=st.integers(len(HEADER) + 1, len(ENGINE) - 1))
def test_an_engine_line_wrapped_at_any_width_reads_as_the_whole_line(width: int) -> None:
    (whole,), _ = parse(ENGINE)
    pieces = [ENGINE[i : i + width] for i in range(0, len(ENGINE), width)]
    (wrapped,), _ = parse(*pieces, "INFO 04-04 16:31:00 [core.py:70] init engine took 12.0 s")
    assert wrapped.config == whole.config, pieces
