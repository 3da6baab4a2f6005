from timeline.workload import workload_label


def test_label_names_model_parallelism_and_speculation():
    config = {
        "model_path": "/models/Qwen/Qwen3-235B-A22B/",
        "tp_size": 8,
        "dp_size": 1,
        "ep_size": 8,
        "speculative_algorithm": "EAGLE3",
        "speculative_num_steps": 2,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 3,
        "quantization": "fp8",
        "dtype": "auto",
        "kv_cache_dtype": "fp8_e5m2",
    }
    assert workload_label(config) == "Qwen3-235B-A22B tp8 ep8 EAGLE3/2/1/3 fp8 kv=fp8_e5m2"


def test_label_of_empty_config_is_empty():
    assert workload_label({}) == ""
