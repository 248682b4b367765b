"""scripts/sass_loops.py on a made-up nvdisasm listing: two kernels, the second with two loops."""
import pytest
from conftest import load_script


LISTING = """\
.text._Z5otherv:
        /*0000*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;
.L_x_0:
        /*0010*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;
        /*0020*/               @P0 BRA `(.L_x_0) ;
.text._Z6kernelv:
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0030*/                   LOP3.LUT R4, R4, 0xf000f, RZ, 0xc0, !PT ;
        /*0040*/               @P1 BRA `(.L_x_1) ;
.L_x_2:
        /*0050*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0060*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0070*/                   IADD3 R2, P0, R2, 0x40, RZ ;
        /*0080*/              @!P0 BRA `(.L_x_2) ;
        /*0090*/                   EXIT ;
"""


@pytest.fixture
def sass_loops():
    return load_script("sass_loops")


def test_the_loop_with_the_most_hmma_of_the_named_kernel(sass_loops, tmp_path, capsys):
    listing = tmp_path / "k.sass"
    listing.write_text(LISTING)
    assert sass_loops.main([str(listing), "_Z6kernel", "--weights", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "loop 0x0050-0x0080: 4 instructions, 2 HMMA, 2.00 per weight"
    assert out[1] == "HMMA 2 IADD3 1 BRA 1"


def test_another_opcode_marks_another_loop(sass_loops, tmp_path, capsys):
    listing = tmp_path / "k.sass"
    listing.write_text(LISTING)
    sass_loops.main([str(listing), "_Z6kernel", "--op", "LDG"])
    assert capsys.readouterr().out.startswith("loop 0x0010-0x0040: 4 instructions, 1 LDG\n")


def test_a_kernel_not_in_the_listing_is_named(sass_loops, tmp_path):
    listing = tmp_path / "k.sass"
    listing.write_text(LISTING)
    with pytest.raises(SystemExit, match="no kernel matching 'missing'"):
        sass_loops.main([str(listing), "missing"])
