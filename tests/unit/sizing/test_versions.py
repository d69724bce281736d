"""vLLM versions compare in PEP 440 order, and the per-version rules follow that order.

The rule (tritonops/sizing/versions.py): every table names the first *release* a rule holds for,
so a pre-release or dev build of X takes the rules below X; a post release of X takes X's.
"""

import pytest
from packaging.version import Version

from tritonops.errors import InputError
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_arg_keys import accepts
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.model_catalog import find_catalog_model
from tritonops.sizing.versions import parse_version, profile_for

ORDER = ("0.9.0rc1", "0.9.0", "0.9.0.post1", "0.9.1.dev0", "0.9.1", "0.10.0")


def test_versions_sort_in_pep440_order_not_by_their_spelling():
    parsed = [parse_version(text) for text in ORDER]
    assert all(lower < higher for lower, higher in zip(parsed, parsed[1:]))
    assert sorted(reversed(ORDER), key=parse_version) == list(ORDER)
    assert sorted(ORDER) != list(ORDER)  # as strings "0.10.0" < "0.9.0": why they are parsed


def test_nvidia_builds_sort_just_after_the_public_version_they_carry():
    rc = parse_version("0.9.0rc1+1958ee56.nv25.6.cu129")  # NGC 25.06 and 25.07
    assert parse_version("0.8.5") < rc < parse_version("0.9.0")
    build = parse_version("0.9.2+4ef1e343.nv25.8.post1.cu130")  # NGC 25.08: ".post1" is in the label
    assert parse_version("0.9.2") < build < parse_version("0.9.2.post1") < parse_version("0.9.3")


def test_spellings_of_one_version_are_equal():
    assert parse_version("v0.10.2") == parse_version(" 0.10.2") == Version("0.10.2")
    assert parse_version("0.10") == Version("0.10.0")


@pytest.mark.parametrize("text", ["latest", "", "1", "0.x", "0.10.2 (NVIDIA build)", "0.10.2\nrm -rf /"])
def test_a_bad_version_is_refused_in_one_line_naming_it(text):
    with pytest.raises(InputError) as err:
        parse_version(text)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("--vllm-version: '") and "is not a vLLM version (expected e.g. 0.10.2)" in message
    assert text.split("\n")[0] in message


def test_a_bad_version_stops_sizing_with_the_same_line():
    with pytest.raises(InputError, match=r"^--vllm-version: 'main' is not a vLLM version"):
        profile_for("main")


# -- which rules an rc, dev or post version gets -------------------------------------------------
def rules(version, cc=(9, 0)):
    p = profile_for(version, cc)
    return (p.engine, p.memory_formula, p.checks_free_memory_at_start, p.big_gpu_excludes_a100, p.measured_memory,
            p.reserves_null_block)


def test_a_prerelease_takes_the_rules_below_its_release():
    assert rules("0.9.0rc1") == rules("0.8.5") != rules("0.9.0")  # the A100 rule starts in 0.9.0
    assert rules("0.9.1rc1") == rules("0.9.1.dev0") == rules("0.9.0") != rules("0.9.1")  # free-memory check
    assert profile_for("0.8.0rc2").engine == "V0" and profile_for("0.8.0").engine == "V1"
    assert rules("0.23.0rc1") == rules("0.22.1") != rules("0.23.0")  # the null block


def test_a_post_release_or_fourth_number_takes_its_release_rules():
    assert rules("0.9.1.post1") == rules("0.9.1")
    assert rules("0.9.0.1") == rules("0.9.0")  # NGC 25.06's pin
    assert profile_for("0.6.3.post1").memory_formula == "v0_peak_growth"
    assert profile_for("0.6.4.post1").memory_formula == "v0_torch_peak"


def test_the_measured_025_terms_hold_from_0250_up_to_0260_in_pep440_order():
    assert not profile_for("0.25.0rc1").measured_memory  # below 0.25.0: 0.24's rules
    assert profile_for("0.25.0").measured_memory and profile_for("0.25.1.post1").measured_memory
    assert profile_for("0.26.0rc1").measured_memory  # below 0.26.0: 0.25's rules
    assert not profile_for("0.26.0").measured_memory


def test_engine_argument_spans_follow_the_same_order():
    assert accepts("disable_log_requests", parse_version("0.10.1rc1"))
    assert not accepts("enable_log_requests", parse_version("0.10.1rc1"))
    assert accepts("enable_log_requests", parse_version("0.10.1.post1"))
    assert not accepts("kv_offloading_size", parse_version("0.12.0.dev5"))
    assert accepts("kv_offloading_size", parse_version("0.12.1rc1"))


def test_sizing_an_nvidia_rc_build_on_an_a100_uses_the_rules_below_090():
    """NGC 25.06 reports 0.9.0rc1+...: 0.8's V1 defaults still count an A100-80GB as a big GPU."""
    qwen = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")
    a100 = gpu_spec_from_catalog("a100-80gb")
    seqs = {version: size_engine(qwen, a100, SizingRequest(model_ref="q", vllm_version=version)).max_num_seqs
            for version in ("0.8.5", "0.9.0rc1+1958ee56.nv25.6.cu129", "0.9.0", "0.9.0.1")}
    assert seqs == {"0.8.5": 1024, "0.9.0rc1+1958ee56.nv25.6.cu129": 1024, "0.9.0": 256, "0.9.0.1": 256}
