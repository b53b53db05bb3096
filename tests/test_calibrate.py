"""Calibration: microbenchmarks -> profile file -> --accelerator-file; the real decode model.

Runs with NumPy; the PyTorch parts are skipped cleanly when torch is absent, the CUDA parts without a GPU.
No assertion depends on timings (the machine may be shared); sizes are small so the file runs in seconds.
"""

import numpy as np
import pytest
import yaml

from roofline.calibrate.decode import (
    OPS_PER_LAYER,
    OPS_PER_PASS,
    LlamaDecoder,
    decode_check,
    predict_decode,
    tiny_model,
)
from roofline.calibrate.microbench import fit_half_rows, run_microbenchmarks, torch_available
from roofline.calibrate.profile import calibrated_family, load_profile, profile_document
from roofline.catalog import Catalog, parse_accelerator
from roofline.cli import main

SMALL = dict(rows=(1, 8, 64), width=256, copy_mib=8, repeats=2)


@pytest.fixture(scope="module")
def mb():
    return run_microbenchmarks("numpy", **SMALL)


def test_fit_half_rows_recovers_a_known_curve():
    rows = np.array([1, 4, 16, 64, 256, 4096])
    flops = 1e11 * rows / (rows + 24.0)
    assert fit_half_rows(rows, flops) == pytest.approx(24.0 * 4096 / (4096 + 24) + 0.0, rel=0.05)


def test_profile_is_a_catalog_row(mb, tmp_path):
    doc = profile_document(mb)
    cat = Catalog()
    cat.add_document(doc, "profile")  # the same loader as --catalog
    acc = cat.accelerator("calibrated")
    assert acc.flops_per_s["fp32"] == pytest.approx(max(mb.matmul_flops_per_s["fp32"]), rel=1e-5)
    assert acc.hbm_bytes_per_s == pytest.approx(max(mb.copy_bytes_per_s, mb.matvec_bytes_per_s), rel=1e-5)
    p = tmp_path / "profile.yaml"
    p.write_text(yaml.safe_dump(doc))
    assert load_profile(p).id == "calibrated"


def test_calibrated_family_factors_are_fractions(mb):
    fam = calibrated_family(mb, OPS_PER_LAYER, OPS_PER_PASS)
    for f in (fam.weight_bandwidth, fam.kv_bandwidth, fam.attention_compute):
        assert 0 < f.low <= f.value <= f.high <= 1
    assert fam.layer_overhead_s.value == pytest.approx(OPS_PER_LAYER * mb.op_overhead_s)


def test_numpy_decoder_runs_and_is_deterministic():
    m = tiny_model()
    d1, d2 = LlamaDecoder(m, "numpy"), LlamaDecoder(m, "numpy")
    for d in (d1, d2):
        d.allocate(2, 16)
    tok = np.array([1, 2])
    a, b = d1.step(tok), d2.step(tok)
    assert a.shape == (2, m.vocab) and np.all(np.isfinite(a))
    np.testing.assert_allclose(a, b)
    # the whole step stays in fp32, like the fp32 profile it is checked against (a float64 scalar once
    # promoted the scores, and then every matmul copied its weights to fp64: a 5x slower decode)
    assert a.dtype == np.float32


def test_prediction_grows_with_batch_and_context(mb):
    acc = parse_accelerator(profile_document(mb)["accelerators"][0], "p")
    fam = calibrated_family(mb, OPS_PER_LAYER, OPS_PER_PASS)
    m = tiny_model()
    t = [predict_decode(m, acc, fam, b, c)[0] for b, c in ((1, 128), (4, 128), (4, 1024))]
    assert t[0] < t[1] < t[2]
    mid, fast, slow = predict_decode(m, acc, fam, 4, 512)
    assert fast < mid < slow


def test_decode_check_numpy_small(mb):
    acc = parse_accelerator(profile_document(mb)["accelerators"][0], "p")
    pts = decode_check(acc, calibrated_family(mb, OPS_PER_LAYER, OPS_PER_PASS), batches=(1,), contexts=(32,),
                       backend="numpy", repeats=1)
    assert len(pts) == 1 and pts[0].measured_s > 0 and np.isfinite(pts[0].error)


@pytest.mark.skipif(not torch_available(), reason="PyTorch not installed")
def test_torch_decoder_runs():
    import torch

    d = LlamaDecoder(tiny_model(), "torch")
    d.allocate(2, 16)
    with torch.inference_mode():
        out = d.step(torch.tensor([1, 2]))
    assert tuple(out.shape) == (2, 8192) and bool(torch.isfinite(out).all())


@pytest.mark.skipif(not torch_available(), reason="PyTorch not installed")
def test_cuda_request_without_gpu_is_a_clear_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    from roofline.errors import InputError

    with pytest.raises(InputError, match="needs PyTorch with a visible CUDA GPU"):
        run_microbenchmarks("torch", "cuda", **SMALL)


def test_cli_calibrate_check_requires_file(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["calibrate-check"])
    assert exc.value.code == 1
    assert "--accelerator-file is required" in capsys.readouterr().err


def test_cli_calibrate_check_bad_file(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("accelerators:\n  - {id: x}\n")
    with pytest.raises(SystemExit) as exc:
        main(["calibrate-check", "--accelerator-file", str(p)])
    assert exc.value.code == 1
    assert "missing required key" in capsys.readouterr().err


def test_cli_calibrate_bad_batches(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "--out", str(tmp_path), "--batches", "1,x", "--backend", "numpy"])
    assert exc.value.code == 1
    assert "comma-separated whole numbers" in capsys.readouterr().err


def test_measured_gemm_curve_replaces_the_saturating_form():
    """A family with a measured curve interpolates it (log rows); the corners scale it."""
    from roofline.calibrate.decode import ShapeCalibration, shape_family
    from roofline.efficiency import families, family_efficiency, gemm_efficiency

    fam = shape_family(families()["generic"], ShapeCalibration(gemm_curve=((1.0, 0.1), (16.0, 0.5)),
                                                               kv_bandwidth=(0.6, 0.5, 0.7)))
    eff = family_efficiency(fam, "fp32")
    assert gemm_efficiency(1, eff) == pytest.approx(0.1 * fam.gemm.value)
    assert gemm_efficiency(4, eff) == pytest.approx(0.3 * fam.gemm.value)  # halfway in log(rows)
    assert gemm_efficiency(64, eff) == pytest.approx(0.5 * fam.gemm.value)  # held beyond the last point
    assert fam.kv_bandwidth.value == 0.6 and fam.kv_bandwidth.low == 0.5


def test_cuda_without_torch_is_a_clear_error():
    from roofline.calibrate.microbench import resolve_backend, torch_available
    from roofline.errors import InputError

    if torch_available():
        pytest.skip("PyTorch is installed here; the message is for machines without it")
    with pytest.raises(InputError, match="--device cuda needs PyTorch"):
        resolve_backend("auto", "cuda")
