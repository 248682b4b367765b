"""scripts/decode_matrix_report.py on made-up parts of a decode matrix (bench/op_matrix --json)."""
import json
import lzma

import pytest
from conftest import load_script


@pytest.fixture
def report():
    return load_script("decode_matrix_report")


def cell(shape, pick_us, default_us, peer_us, peer="cublas", spread=0.01, bw=0.9):
    times = {"pick": {"t_s": pick_us * 1e-6, "spread": spread, "over_pick": 1.0},
             "default": {"t_s": default_us * 1e-6, "spread": spread,
                         "over_pick": default_us / pick_us},
             peer: {"t_s": peer_us * 1e-6, "spread": spread, "over_pick": peer_us / pick_us}}
    return {"shape": shape, "times": times, "fraction_of_read_bandwidth": bw,
            "pick_tactic": "t.pick"}


def tune(bucket, default_status="ok"):
    return {"bucket": bucket, "default": "t.default",
            "candidates": [{"tactic": "t.default", "status": default_status},
                           {"tactic": "t.other", "status": "gate_failed"}]}


def part(op, numerics, results, tunes):
    return {"op": op, "numerics": numerics, "device": {"model": "Test GPU"},
            "results": results, "tunes": tunes}


def test_each_point_per_op_and_format(report, tmp_path, capsys):
    gemv = part("gemv.bf16", "batch_invariant", [
        # 28672 x 4096 is 235 MB in bf16: a large matrix.
        cell("rows=1,n=28672,k=4096", 80.0, 80.0, 84.0, bw=0.91),
        cell("rows=32,n=28672,k=4096", 100.0, 110.0, 90.0, bw=0.77),
        # 3 % slower than its default, spreads 1 %: counted; the peer 0.5x.
        cell("rows=16,n=896,k=896", 4.12, 4.0, 2.06, bw=0.3),
    ], [tune("rows=1,n=28672,k=4096"), tune("rows=32,n=28672,k=4096")])
    qmv = part("qmv.affine", "batch_invariant", [
        cell("rows=1,n=4096,k=4096,bits=4,group=64", 8.0, 9.0, 16.0, "cublas.dequant"),
        # 2 % slower than its default, but inside a 3 % spread: not counted.
        cell("rows=1,n=4096,k=4096,bits=8,group=64", 10.2, 10.0, 15.0, "cublas.dequant",
             spread=0.03),
    ], [tune("rows=1,n=4096,k=4096,bits=4,group=64"),
        tune("rows=1,n=4096,k=4096,bits=8,group=64", default_status="gate_failed")])
    (tmp_path / "gemv.json").write_text(json.dumps(gemv))
    with lzma.open(tmp_path / "qmv.json.xz", "wt") as f:
        json.dump(qmv, f)
    md = tmp_path / "report.md"
    assert report.main([str(tmp_path / "gemv.json"), str(tmp_path / "qmv.json.xz"),
                        "--md", str(md)]) == 0
    rows = {}  # the first table's row of each (op, numerics, format)
    for line in md.read_text().splitlines():
        if line.startswith("| gemv") or line.startswith("| qmv"):
            rows.setdefault(tuple(c.strip() for c in line.strip("|").split("|")[:3]), line)
    g = [c.strip() for c in rows[("gemv.bf16", "batch_invariant", "bf16")].strip("|").split("|")]
    assert g[3] == "3"                      # cells
    assert g[4] == "2 of 2 tunes"           # default passed its gate
    assert g[5] == "1, 3.0 %"               # pick slower than default
    assert g[6] == f"{(84 / 80 * 0.5) ** 0.5:.3f}"  # peer / pick geomean over rows 1-16
    assert g[7] == "0.500 (rows=16,n=896,k=896)"
    assert g[8] == "2"                      # cells below 1.0x the peer
    assert (g[9], g[10]) == ("0.910", "0.770")  # the large matrix only
    q4 = [c.strip() for c in rows[("qmv.affine", "batch_invariant", "int4 g64")].strip("|")
          .split("|")]
    assert (q4[4], q4[5], q4[6]) == ("1 of 1 tunes", "0", "2.000")
    q8 = [c.strip() for c in rows[("qmv.affine", "batch_invariant", "int8 g64")].strip("|")
          .split("|")]
    assert (q8[4], q8[5]) == ("0 of 1 tunes", "0")
    text = md.read_text()
    assert "- gemv.bf16 (batch_invariant) rows=16,n=896,k=896: pick / default 1.030" in text
    # The peer faster by 10 % (spreads 1 %, no tune margin in the cell): beyond.
    assert ("- gemv.bf16 (batch_invariant, bf16) rows=32,n=28672,k=4096: peer / pick 0.9000, "
            "beyond") in text
    assert "Test GPU" in capsys.readouterr().out


def test_cells_below_the_peer_are_classed_by_spreads_and_margin(report, tmp_path):
    within_spreads = cell("rows=1,n=4096,k=4096", 10.0, 10.0, 9.85)        # 1.5 % < 2 x 1 %
    within_margin = dict(cell("rows=2,n=4096,k=4096", 10.0, 10.0, 9.75),   # 2.5 % <= 3 %
                         tune_margin=0.03)
    beyond = dict(cell("rows=3,n=4096,k=4096", 10.0, 10.0, 9.6), tune_margin=0.03)  # 4 %
    faster = cell("rows=4,n=4096,k=4096", 10.0, 10.0, 11.0)
    doc = part("gemv.bf16", "tolerance", [within_spreads, within_margin, beyond, faster],
               [tune("rows=1,n=4096,k=4096")])
    (tmp_path / "m.json").write_text(json.dumps(doc))
    md = tmp_path / "r.md"
    assert report.main([str(tmp_path / "m.json"), "--md", str(md)]) == 0
    text = md.read_text()
    section = text.split("## Cells below 1.0x the peer")[1].split("##")[0]
    assert "rows=1,n=4096,k=4096: peer / pick 0.9850, within the spreads" in section
    assert "rows=2,n=4096,k=4096: peer / pick 0.9750, within the tune's margin" in section
    assert "rows=3,n=4096,k=4096: peer / pick 0.9600, beyond" in section
    assert "rows=4,n=4096,k=4096" not in section
    # Worst first.
    assert section.index("rows=3,") < section.index("rows=2,") < section.index("rows=1,")


def test_a_file_that_is_not_a_report_is_refused(report, tmp_path, capsys):
    bad = tmp_path / "matrix.json"
    bad.write_text('{"op": "gemv.bf16"}')
    assert report.main([str(bad), "--md", str(tmp_path / "r.md")]) == 2
    assert "matrix.json is not an op_matrix report (KeyError" in capsys.readouterr().err
    assert not (tmp_path / "r.md").exists()
