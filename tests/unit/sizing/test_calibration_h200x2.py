"""Sizing against what vLLM 0.25.0 measured on two NVLinked H200s at TP 2 (tests/fixtures/real/calib-h200x2-tp2).

The expected numbers are never written here: each test reads them from the fixture's measurements.csv.
Every row is fitted (the TP 2 rules were read off them): there is no held-out TP 2 run."""

from __future__ import annotations

import json

import pytest

from tests.support import paths
from tritonops.cli.main import main
from tritonops.sizing import calibrated_terms as terms
from tritonops.sizing.calibration import replay, summarize
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.memory_model import startup_bytes
from tritonops.sizing.model_catalog import find_catalog_model
from tritonops.sizing.model_spec import model_spec_from_config
from tritonops.sizing.startup_log import parse_rank_measurements
from tritonops.units import MIB

FIXTURES = paths.FIXTURES / "real" / "calib-h200x2-tp2"
MODELS = paths.FIXTURES / "models"
RECORDS = parse_rank_measurements((FIXTURES / "measurements.csv").read_text())
TP2 = [r for r in RECORDS if r.tensor_parallel_size == 2]


def _model(name: str):
    return model_spec_from_config(json.loads((FIXTURES / "models" / name / "config.json").read_text()), name=name)


def _replay(record):
    return replay(record, _model(record.model), gpu_spec_from_catalog(f"h200:{record.tensor_parallel_size}"))


def test_the_table_holds_five_tp2_runs_and_a_tp1_control_all_fitted():
    assert sorted(r.tensor_parallel_size for r in RECORDS) == [1, 2, 2, 2, 2, 2]
    split = json.loads((FIXTURES / "split.json").read_text())
    assert sorted(split["fitted"]) == sorted(r.run_id for r in RECORDS) and split["held_out"] == []


def test_the_budget_identity_holds_on_each_rank():
    """What the terms below predict is what vLLM subtracts: requested - weights - activation - non-torch."""
    for r in RECORDS:
        assert r.available_kv == r.requested_memory - r.weights - r.activation - r.non_torch, r.run_id


@pytest.mark.parametrize("record", TP2, ids=lambda r: r.run_id)
def test_per_rank_terms_bound_what_each_tp2_rank_measured(record):
    """Each term at most a few tens of MiB over what rank 0 read (and never under)."""
    model = _model(record.model)
    weights = terms.weights(model, record.dtype, 2)
    activation = terms.activation(model, record.max_num_batched_tokens, record.max_num_seqs, record.enforce_eager, 2)
    non_torch = terms.non_torch(model, record.enforce_eager, 2)
    assert 0 <= weights - record.weights <= 20 * MIB
    assert 0 <= non_torch - record.non_torch <= 10 * MIB
    slack = 25 * MIB if record.enforce_eager else 320 * MIB   # compiled at TP 2: the eager forward bounds it
    assert 0 <= activation - record.activation <= slack


def test_the_tp2_rows_meet_the_issue_goal_and_none_over_promises():
    replays = [_replay(r) for r in TP2]
    s = summarize(replays)
    assert s.over_promises == 0 and s.missed_accepts == 0
    assert s.median_abs_error <= 0.005 and abs(s.worst_error) <= 0.02
    assert all(r.plan.memory.safety_margin == 0 for r in replays)
    assert not any(n.startswith("uncalibrated") for r in replays for n in r.plan.notes)


def test_the_tp1_control_on_the_two_gpu_machine_is_predicted_as_on_one_gpu():
    (control,) = [r for r in RECORDS if r.tensor_parallel_size == 1]
    r = _replay(control)
    assert not r.over_promise and abs(r.error) <= 0.001


@pytest.mark.parametrize("run_id,eager", [("P01", ["--enforce-eager"]), ("Q01", [])])
def test_size_on_the_qwen25_7b_model_dir_at_tp2_is_within_half_a_percent(capsys, run_id, eager):
    (row,) = [r for r in RECORDS if r.run_id == run_id]
    code = main(["size", "--json", "--model", str(MODELS / "Qwen2.5-7B-Instruct"), "--gpu", "h200:2",
                 "--tensor-parallel-size", "2", "--vllm-version", "0.25.0",
                 "--gpu-memory-utilization", str(row.gpu_memory_utilization), "--max-model-len", str(row.max_model_len),
                 "--max-num-seqs", str(row.max_num_seqs), "--max-num-batched-tokens", str(row.max_num_batched_tokens),
                 *eager])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["fits"]
    predicted = out["kv_cache_tokens"]
    assert predicted <= row.kv_tokens and (row.kv_tokens - predicted) / row.kv_tokens <= 0.005


def test_tp4_and_tp8_keep_an_allowance_that_tp2_no_longer_needs():
    qwen = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")
    plans = {tp: size_engine(qwen, gpu_spec_from_catalog("h200:8"),
                             SizingRequest(vllm_version="0.25.0", tensor_parallel_size=tp, max_model_len=8192))
             for tp in (2, 4)}
    assert plans[2].memory.safety_margin == 0 and not any(n.startswith("uncalibrated") for n in plans[2].notes)
    budget = plans[4].memory.budget
    assert plans[4].memory.safety_margin >= int(terms.UNMEASURED_TP_BUDGET_SHARE * budget)
    assert any(n.startswith("uncalibrated") for n in plans[4].notes)
    tp_why = {tp: next(r.why for r in plan.reasons if r.field == "tensor_parallel_size") for tp, plan in plans.items()}
    assert "TP 4 is not measured" in tp_why[4] and "not measured" not in tp_why[2]


def test_the_startup_memory_before_the_snapshot_bounds_each_tp2_rank():
    """total - free at vLLM's snapshot (the rows' init_free) fits under the TP 2 start-up figure."""
    text = (FIXTURES / "measurements.csv").read_text().splitlines()
    header = text[0].split(",")
    for line in text[1:]:
        row = dict(zip(header, line.split(",")))
        used = int(row["total_mem_bytes"]) - int(row["init_free_bytes"])
        held = startup_bytes(int(row["tp"]), (9, 0))
        assert used <= held and held - used <= 64 * MIB, row["id"]


def test_a_utilization_leaving_less_than_the_tp2_startup_memory_is_refused():
    qwen = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")
    gpus = gpu_spec_from_catalog("h200:2")
    request = dict(vllm_version="0.25.0", max_model_len=8192, enforce_eager=True)
    tight = size_engine(qwen, gpus, SizingRequest(tensor_parallel_size=2, gpu_memory_utilization=0.995, **request))
    assert not tight.fits and any("before vLLM's snapshot" in p for p in tight.problems)
    assert size_engine(qwen, gpus, SizingRequest(tensor_parallel_size=1, gpu_memory_utilization=0.995, **request)).fits
    assert size_engine(qwen, gpus, SizingRequest(tensor_parallel_size=2, gpu_memory_utilization=0.98, **request)).fits


def test_the_families_measured_at_tp2_are_those_of_the_fixtures_runs():
    measured = {_model(r.model).model_type for r in TP2}
    assert terms.MEASURED_TP_TYPES == {2: frozenset(measured)}


def _at(model_ref: str, tp: int):
    return size_engine(find_catalog_model(model_ref), gpu_spec_from_catalog("h200:2"),
                       SizingRequest(vllm_version="0.25.0", tensor_parallel_size=tp, max_model_len=8192))


def _tp_why(plan) -> str:
    return next(r.why for r in plan.reasons if r.field == "tensor_parallel_size")


def _kv_without_allowance(plan) -> int:
    m = plan.memory
    return m.budget - m.weights - m.activation - m.non_torch - m.cudagraph


def test_a_family_measured_at_tp2_is_sized_by_the_rules_alone():
    qwen = _at("Qwen/Qwen2.5-7B-Instruct", 2)
    assert qwen.memory.safety_margin == 0
    assert qwen.memory.kv_cache == _kv_without_allowance(qwen)
    assert "allowance" not in _tp_why(qwen)


def test_a_family_not_measured_at_tp2_keeps_a_share_of_the_budget_and_the_plan_says_why():
    """The TP 2 rules were read off Qwen2 runs only: Llama (measured at TP 1) keeps 0.5 % of the budget at TP 2."""
    llama = _at("meta-llama/Llama-3.1-8B-Instruct", 2)
    allowance = int(terms.UNMEASURED_TP_BUDGET_SHARE * llama.memory.budget)
    assert llama.memory.safety_margin == allowance
    assert llama.memory.kv_cache == _kv_without_allowance(llama) - allowance
    assert _tp_why(llama) == ("as requested; TP 2 is measured for vLLM 0.25.0 on qwen2 models only, not llama: "
                              "the KV figure keeps 0.5% of the budget as an allowance for it")
    assert not any(n.startswith("uncalibrated") for n in llama.notes)   # TP 1 terms and the GPU were measured


@pytest.mark.parametrize("model_ref", ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct"])
def test_at_tp1_no_family_keeps_the_tp_allowance(model_ref):
    plan = _at(model_ref, 1)
    assert plan.memory.safety_margin == 0 and plan.memory.kv_cache == _kv_without_allowance(plan)
    assert _tp_why(plan) == "as requested"
