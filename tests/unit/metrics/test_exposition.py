"""The Prometheus text parser: what Triton writes, what the format allows, and garbage named by line."""

import math

from tests.support.paths import FIXTURES
from tritonops.metrics.exposition import Sample, parse_exposition

REAL = FIXTURES / "real"


def test_samples_labels_and_types_of_a_small_page():
    page = parse_exposition(
        '# HELP nv_inference_count Number of inferences\n'
        '# TYPE nv_inference_count counter\n'
        'nv_inference_count{model="m",version="1"} 7\n'
        'nv_cpu_utilization 0.25\n'
        '\n'
        'vllm:num_requests_waiting{version="1",model="m"} 3 1700000000000\n')
    assert page.samples == (
        Sample("nv_inference_count", (("model", "m"), ("version", "1")), 7.0),
        Sample("nv_cpu_utilization", (), 0.25),
        Sample("vllm:num_requests_waiting", (("model", "m"), ("version", "1")), 3.0),
    )
    assert page.types == {"nv_inference_count": "counter"}
    assert page.errors == ()


def test_label_values_with_escapes_commas_and_braces():
    page = parse_exposition('x{a="q\\"uo,te}",b="back\\\\slash",c="new\\nline",} 1\n')
    assert page.samples[0].labels == (("a", 'q"uo,te}'), ("b", "back\\slash"), ("c", "new\nline"))


def test_special_values():
    values = [s.value for s in parse_exposition("a NaN\nb +Inf\nc -Inf\nd 1e3\n").samples]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 1000.0]


def test_garbage_lines_are_errors_naming_their_line():
    page = parse_exposition("ok 1\n<html>\nx{a=\"1\" 2\ny notanumber\nz 1 2 3\n")
    assert [s.name for s in page.samples] == ["ok"]
    assert [error.split(":")[0] for error in page.errors] == ["line 2", "line 3", "line 4", "line 5"]


def test_every_line_of_the_real_h200_pages_parses():
    for name in ("h200-serve-qwen05", "h200-serve-qwen7b", "h200-serve-two-models"):
        text = (REAL / name / "metrics.txt").read_text()
        page = parse_exposition(text)
        samples = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
        assert page.errors == () and len(page.samples) == len(samples)
        assert page.types["vllm:time_to_first_token_seconds"] == "histogram"
