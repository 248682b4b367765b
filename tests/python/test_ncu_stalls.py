"""scripts/ncu_stalls.py on a made-up Nsight Compute source page (CSV)."""
import pytest
from conftest import load_script

PAGE = """\
==PROF== Connected to process 1
"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","stall_long_sb","stall_wait","Instructions Executed"
"0x10","LDG.E.128 R4, desc[UR4][R2.64]","1,200","1000","900","10","64"
"0x20","HMMA.16816.F32.BF16 R8, R4, R12, R8","300","250","0","200","64"
"0x30","LOP3.LUT R4, R4, 0xf000f, RZ, 0xc0, !PT","500","400","0","450","64"
"0x40","EXIT","0","0","0","0","1"
"""


@pytest.fixture
def ncu_stalls():
    return load_script("ncu_stalls")


def test_lines_by_stall_samples_with_their_reasons(ncu_stalls, tmp_path, capsys):
    page = tmp_path / "source.csv"
    page.write_text(PAGE)
    assert ncu_stalls.main([str(page), "--top", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "4 SASS lines, 2000 stall samples in all"
    # Reasons by their total (660 wait, 900 long scoreboard); "Instructions Executed" is not one.
    assert out[1] == "  stall_long_sb: 900 (45.0 %)"
    assert out[2] == "  stall_wait: 660 (33.0 %)"
    assert out[3] == ""
    assert out[4].startswith("0x10   60.0 %  LDG.E.128")
    assert out[5].split() == ["stall_long_sb=900", "stall_wait=10"]
    assert out[6].startswith("0x30   25.0 %  LOP3.LUT")
    assert len(out) == 8  # --top 2: the HMMA line is left out


def test_a_page_without_the_sampling_column_is_refused(ncu_stalls, tmp_path, capsys):
    page = tmp_path / "source.csv"
    page.write_text('"Address","Source","Instructions Executed"\n"0x10","EXIT","1"\n')
    assert ncu_stalls.main([str(page)]) == 1
    assert "no 'Warp Stall Sampling (All Samples)' column" in capsys.readouterr().err
