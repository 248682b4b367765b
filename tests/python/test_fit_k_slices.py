"""scripts/fit_k_slices.py on made-up tunes of a decode matrix in tolerance numerics."""
import json

import pytest
from conftest import load_script


@pytest.fixture
def fit():
    return load_script("fit_k_slices")


def cand(ks, median, status="ok", kernel="gemv.bf16.mma"):
    return {"tactic": f"{kernel}:rows_per_cta=8,warps=8,warps_k={ks},split_k=1",
            "status": status, "median_s": median}


def part(numerics, tunes):
    return {"numerics": numerics, "tunes": tunes}


def tune(bucket, default_ks, candidates):
    return {"bucket": bucket, "default": f"gemv.bf16.mma:warps=8,warps_k={default_ks},split_k=1",
            "candidates": candidates}


def test_each_order_is_costed_over_the_row_buckets(fit, tmp_path, capsys):
    doc = part("tolerance", [
        # k_slices 2 (the default) is fastest at one row, 4 at 32 rows; 8 is slower at both.
        tune("rows=1,n=896,k=896", 2, [cand(2, 4.0), cand(4, 5.0), cand(8, 6.0),
                                       # the vendor and a gated-out config do not count
                                       cand(16, 1.0, kernel="gemv.bf16.cublaslt"),
                                       cand(16, 1.0, status="gate_failed")]),
        tune("rows=32,n=896,k=896", 2, [cand(2, 10.0), cand(4, 5.0), cand(8, 6.0)]),
    ])
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(doc))
    md = tmp_path / "fit.md"
    assert fit.main([str(path), "--md", str(md)]) == 0
    out = capsys.readouterr().out
    assert md.read_text() == out
    row = [line for line in out.splitlines() if line.startswith("| n=896,k=896")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:3] == ["2", "2"]  # buckets, default k_slices
    assert cells[3] == "**1.414** (1.00, 2.00)"  # sqrt(1 x 2), the default marked
    assert cells[4] == "1.118 (1.25, 1.00)"  # sqrt(1.25 x 1)
    assert cells[5] == "1.342 (1.50, 1.20)"
    assert len(cells) == 6  # no k_slices 16 column: only the vendor and a refused config had it
    assert "- the default's k_slices: 1.414" in out
    assert "- k_slices 4 everywhere: 1.118" in out


def test_a_batch_invariant_part_is_refused(fit, tmp_path, capsys):
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(part("batch_invariant", [])))
    assert fit.main([str(path)]) == 2
    assert "tuned in batch_invariant numerics" in capsys.readouterr().err
