"""scripts/fit_k_slices.py on made-up tunes of a decode matrix in tolerance numerics."""
import collections
import json
import lzma

import pytest
from conftest import load_script


@pytest.fixture
def fit():
    return load_script("fit_k_slices")


def row_cells(out, shape):
    """The cells of the table row of `shape` in the printed table."""
    row = [line for line in out.splitlines() if line.startswith(f"| {shape} ")][0]
    return [c.strip() for c in row.strip("|").split("|")]


def assert_refused(fit, capsys, path, text, *args):
    """fit_k_slices exits 2 on `path`, naming the problem with `text`."""
    assert fit.main([str(path), *args]) == 2
    assert text in capsys.readouterr().err


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
    cells = row_cells(out, "n=896,k=896")
    assert cells[1:3] == ["2", "2"]  # buckets, default k_slices
    assert cells[3] == "**1.414** (1.00, 2.00)"  # sqrt(1 x 2), the default marked
    assert cells[4] == "1.118 (1.25, 1.00)"  # sqrt(1.25 x 1)
    assert cells[5] == "1.342 (1.50, 1.20)"
    assert len(cells) == 6  # no k_slices 16 column: only the vendor and a refused config had it
    assert "- the default's k_slices: 1.414" in out
    assert "- k_slices 4 everywhere: 1.118" in out


HEADER = "n,k,rows,candidate,us,default\n"


def harness_csv(tmp_path, lines, name="table.csv"):
    """A harness CSV of `lines` under the header with a default column; its path."""
    path = tmp_path / name
    path.write_text(HEADER + "".join(line + "\n" for line in lines))
    return path


def test_a_batch_invariant_part_is_refused(fit, tmp_path, capsys):
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(part("batch_invariant", [])))
    assert_refused(fit, capsys, path, "tuned in batch_invariant numerics")


def test_a_harness_csv_counts_only_the_default_path_order(fit, tmp_path, capsys):
    path = harness_csv(tmp_path, [
        "896,896,1,gemv.bf16.mma:warps=8,warps_k=2,split_k=1,4.0,1",
        "896,896,1,gemv.bf16.ring:warps=8,warps_k=4,split_k=1,2.0,0",   # the mma order
        "896,896,1,gemv.bf16.fma:warps=8,warps_k=8,split_k=1,1.0,0",    # another order
        "896,896,1,cublasLt,0.5,0",
        "896,896,1,load_only,0.5,0",
        "896,896,32,gemv.bf16.mma:warps=8,warps_k=2,split_k=1,8.0,1",
        "896,896,32,gemv.bf16.mma:warps=4,warps_k=2,split_k=2,4.0,0"])  # k_slices 4
    assert fit.main([str(path)]) == 0
    out = capsys.readouterr().out
    cells = row_cells(out, "n=896,k=896")
    assert cells[1:3] == ["2", "2"]
    assert cells[3] == "**2.000** (2.00, 2.00)"
    assert cells[4] == "1.000 (1.00, 1.00)"
    assert len(cells) == 5  # no k_slices 8: only the fma path had it


def test_a_quoted_candidate_reads_as_the_bare_one(fit, tmp_path, monkeypatch):
    lines = ["896,896,1,gemv.bf16.mma:warps=8,warps_k=2,split_k=1,4.0,1",
             "896,896,1,gemv.bf16.mma:warps=8,warps_k=4,split_k=1,2.0,0"]
    bare = harness_csv(tmp_path, lines)
    quoted = harness_csv(tmp_path, [line.replace("gemv", '"gemv').replace("split_k=1,",
                                                                       'split_k=1",')
                                    for line in lines], name="quoted.csv")
    assert '"gemv.bf16.mma:warps=8,warps_k=2,split_k=1",4.0' in quoted.read_text()
    seen = []
    add = fit.add
    monkeypatch.setattr(fit, "add", lambda *a: (seen.append(a[4:]), add(*a)))
    for path in (bare, quoted):
        fit.read_csv(str(path), collections.defaultdict(dict), {})
    assert len(seen) == 2 and seen[0] == seen[1]
    assert seen[1][1] == "gemv.bf16.mma:warps=8,warps_k=2,split_k=1"  # the default, unquoted


def test_an_xz_compressed_csv_reads_as_the_csv(fit, tmp_path, capsys):
    plain = harness_csv(tmp_path, ["896,896,1,gemv.bf16.mma:warps_k=2,split_k=1,4.0,1",
                                   "896,896,1,gemv.bf16.mma:warps_k=4,split_k=1,2.0,0"])
    packed = tmp_path / "table.csv.xz"
    packed.write_bytes(lzma.compress(plain.read_bytes()))
    assert fit.main([str(plain)]) == 0
    expected = capsys.readouterr().out
    assert fit.main([str(packed)]) == 0
    out = capsys.readouterr().out
    assert out == expected.replace("table.csv", "table.csv.xz")
    assert row_cells(out, "n=896,k=896")[3] == "**2.000** (2.00)"


def test_a_csv_without_the_default_column_is_refused(fit, tmp_path, capsys):
    path = tmp_path / "table.csv"
    path.write_text("n,k,rows,candidate,us\n896,896,1,gemv.bf16.mma:warps_k=2,4.0\n")
    assert_refused(fit, capsys, path, "not a harness CSV with a default column")


def test_the_last_cell_of_a_cut_run_can_be_left_out(fit, tmp_path, capsys):
    path = tmp_path / "table.csv"
    path.write_text(HEADER
                    + "896,896,1,gemv.bf16.mma:warps_k=2,4.0,1\n"
                    + "896,896,1,gemv.bf16.mma:warps_k=4,2.0,0\n"
                    + "896,896,32,gemv.bf16.mma:warps_k=2,8.0,1\n"
                    + "896,896,32,gemv.bf16.mma:warps_k=4,4.")  # torn by the timeout
    assert_refused(fit, capsys, path, "table.csv:5: 5 fields, the header has 6")
    assert fit.main([str(path), "--drop-last-cell"]) == 0
    # the rows=1 bucket alone
    assert row_cells(capsys.readouterr().out, "n=896,k=896")[1] == "1"


def test_rules_are_costed_as_default_k_slices_computes_them(fit, tmp_path, capsys):
    # 896 x 896 (56 m16 tiles, 28 chunks of 32): the present gemv.bf16 rule gives 2 slices
    # (256-element slices), its fill floor 8 (448 warps); 4096 x 4096 (256 tiles): 8 either way.
    assert fit.rule_slices("n=896,k=896", 2048, 8, 0) == 2
    assert fit.rule_slices("n=896,k=896", *fit.PRESENT["gemv"]) == 8
    assert fit.rule_slices("n=4096,k=4096", *fit.PRESENT["gemv"]) == 8
    # qmv.affine int4 (chunks of 128): 896 x 896 has 7, so the floor stops at 4 slices.
    assert fit.rule_slices("n=896,k=896,bits=4,group=64", *fit.PRESENT["qmv"]) == 4
    assert fit.rule_slices("n=28672,k=4096,bits=4,group=64", *fit.PRESENT["qmv"]) == 1
    path = harness_csv(tmp_path, [
        f"896,896,1,gemv.bf16.mma:warps_k={ks},split_k=1,{us},{int(ks == 2)}"
        for ks, us in ((2, 4.0), (4, 3.0), (8, 2.0), (16, 2.5))])
    assert fit.main([str(path), "--rules", "1"]) == 0
    out = capsys.readouterr().out
    assert "- present (2048, 8, 512): 1.000, worst 1.000 (n=896,k=896)" in out
    # --rules 1: the cheapest searched rule alone (8 slices, 1.000; 2, 4 and 16 cost more), the
    # smallest constants first among equals.
    assert out.count("\n- (") == 1
    assert "- (512, 1, 0): 1.000, worst 1.000 (n=896,k=896)" in out
