"""The request layer's two ways in agree: `XRequest.of` (plain Python: CLI and library) and the generated
pydantic model (`model_validate`: the HTTP API) accept the same inputs into the same request and answer, and
refuse the same inputs with the same one-line message; `run(op, body)` equals the CLI's --json."""

from __future__ import annotations

import json

import pytest

from roofline import requests as R
from roofline.errors import RooflineError

BODIES = {
    "step": {"model": "llama-3-70b", "system": "dgx-h100", "batch": 64, "context": 4096, "tp": 8},
    "sweep": {"model": "llama-3-70b", "system": "dgx-h100", "batch": "1,8,64", "context": "0,4096"},
    "overtrain": {"params": 1e11, "target_loss": 2.0},
    "tiers": {"model": "deepseek-v3", "hold": [1.0, 600.0]},
    "catalog": {"section": "systems"},
    "train": {"model": "llama-3-8b", "system": "dgx-h100", "dp": 8, "global_batch": 64},
}
BAD = [
    ("step", {"model": "llama-3-70b", "system": "dgx-h100", "batch": 0}, "batch must be a whole number >= 1"),
    ("step", {"model": "llama-3-70b", "system": "dgx-h100", "tp": 3}, "TP 3 does not divide"),
    ("step", {"model": "llama-3-70b", "system": "dgx-h100", "context": 10**6}, "max_context"),
    ("train", {"model": "llama-3-8b", "system": "dgx-h100", "dtype": "fp4"}, "no native fp4"),
    ("overtrain", {"params": float("nan")}, "params must be > 0"),
    ("tiers", {"kv_bytes": -1}, "kv_bytes must be > 0"),
]


@pytest.mark.parametrize("op", sorted(BODIES))
def test_both_ways_in_give_the_same_request_and_answer(op):
    cls_name, fn_name = R.OPERATIONS[op]
    cls, fn = getattr(R, cls_name), getattr(R, fn_name)
    plain = cls.of(BODIES[op])
    generated = cls.model_validate(BODIES[op])
    assert type(plain) is type(generated) is cls
    assert plain.model_dump() == generated.model_dump()
    assert json.dumps(fn(plain), default=str) == json.dumps(fn(generated), default=str)
    assert fn(plain) == R.run(op, BODIES[op])


@pytest.mark.parametrize("op,body,needle", BAD, ids=[f"{o}-{n[:20]}" for o, _, n in BAD])
def test_both_ways_in_refuse_with_the_same_message(op, body, needle):
    from pydantic import ValidationError

    cls = getattr(R, R.OPERATIONS[op][0])
    with pytest.raises(RooflineError) as plain:
        cls.of(body)
    assert needle in str(plain.value) and "\n" not in str(plain.value)
    with pytest.raises((ValidationError, RooflineError)) as gen:
        cls.model_validate(body)
    err = gen.value
    if isinstance(err, ValidationError):
        err = err.errors()[0]["ctx"]["error"]
    assert str(err) == str(plain.value)


def test_requests_are_frozen_and_unknown_fields_refused():
    req = R.StepRequest.of(model="llama-3-70b", system="dgx-h100")
    with pytest.raises(AttributeError, match="frozen"):
        req.batch = 2
    with pytest.raises(R.UsageError, match="unknown input '--bogus'"):
        R.StepRequest.of(style="cli", model="llama-3-70b", system="dgx-h100", bogus=1)


def test_cli_json_equals_run(run_cli):
    code, out, err = run_cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "64", "-c", "4096", "--tp", "8",
                             "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(R.run("step", BODIES["step"])))


def test_writer_error_is_raised_and_leaves_no_file(tmp_path, monkeypatch):
    import roofline.requests.sweep as S

    req = S.SweepRequest.of(model="llama-3-70b", system="dgx-h100", batch="1,8", context="0",
                            parquet=str(tmp_path / "s.parquet"))

    def broken(req_, writers, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(S, "_write_table", broken)
    with pytest.raises(OSError, match="No space left"):
        S.write(req)
    assert not (tmp_path / "s.parquet").exists()
