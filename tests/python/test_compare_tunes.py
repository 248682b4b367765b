"""scripts/compare_tunes.py's comparison on made-up caches and a fake head-to-head run."""
import json

import pytest
from conftest import load_script


@pytest.fixture
def ct():
    return load_script("compare_tunes")


def entry(key, tactic):
    return {"key": key, "tactic": tactic, "median_s": 1e-5, "spread": 0.01}


KEYS = [f"qmv.affine@1|rows={r},n=4096,k=4096,bits=4,group=64|bf16|NVIDIA H200" for r in (1, 2, 3, 4)]


def test_verdicts_follow_the_switch_margin(ct):
    a = {k: entry(k, "t:a") for k in KEYS}
    b = {k: entry(k, "t:b") for k in KEYS}
    b[KEYS[0]] = entry(KEYS[0], "t:a")  # the same pick: no run
    timings = {"rows=2": (10.0, 0.005, 10.15, 0.004),  # 1.5 % < 2 %: agree
               "rows=3": (10.0, 0.01, 10.5, 0.02),  # 5 % <= 3 x 2 %: agree
               "rows=4": (10.0, 0.005, 10.5, 0.005)}  # 5 % > 2 %: differ
    ran = []

    def bench(op, bucket, tactic):
        ran.append((op, bucket, tactic))
        return timings[bucket.split(",")[0]]

    rows = ct.compare(a, b, bench)
    assert [r["verdict"] for r in rows] == ["same pick", "agree", "agree", "differ"]
    assert ran == [("qmv.affine", f"rows={r},n=4096,k=4096,bits=4,group=64", "t:b") for r in (2, 3, 4)]
    assert rows[3]["ratio"] == pytest.approx(1.05)
    assert rows[2]["margin"] == pytest.approx(0.06)


def test_a_pick_bench_cannot_time_is_listed_not_judged(ct):
    a = {KEYS[0]: entry(KEYS[0], "t:a")}
    b = {KEYS[0]: entry(KEYS[0], "t:b"), KEYS[1]: entry(KEYS[1], "t:b")}
    rows = ct.compare(a, b, lambda *_: "unknown op")
    assert rows == [dict(key=KEYS[0], op="qmv.affine", bucket=KEYS[0].split("|")[1], pick_a="t:a",
                         pick_b="t:b", verdict="not compared", reason="unknown op")]
    report = ct.markdown(rows, 0, 1)
    assert "1 not compared; 0 only in A, 1 only in B" in report
    assert "qmv.affine@1\\|rows=1" in report  # the key's bars do not split the table


def test_bad_input_is_named(ct, tmp_path, capsys):
    bad = tmp_path / "tuning-cache.json"
    bad.write_text(json.dumps({"schema": 1}))
    with pytest.raises(SystemExit) as stop:
        ct.read_entries(str(bad))
    assert stop.value.code == 2
    assert str(bad) in capsys.readouterr().err
    with pytest.raises(ValueError, match="malformed cache key 'qmv.affine'"):
        ct.split_key("qmv.affine")
    other = tmp_path / "a.json"
    other.write_text(json.dumps({"entries": []}))
    assert ct.main([str(other), str(bad)]) == 2
    assert "tuning-cache.json" in capsys.readouterr().err


def test_the_budget_stops_runs_and_keeps_every_op_in_turn(ct):
    other = [k.replace("qmv.affine@1", "gemv.bf16@1").replace(",bits=4,group=64", "") for k in KEYS]
    a = {k: entry(k, "t:a") for k in KEYS + other}
    b = {k: entry(k, "t:b") for k in KEYS + other}
    now = [0.0]
    ran = []

    def bench(op, bucket, tactic):
        ran.append(op)
        now[0] += 10.0  # each head-to-head takes 10 s
        return (10.0, 0.01, 10.0, 0.01)

    rows = ct.compare(a, b, bench, budget_s=25.0, clock=lambda: now[0])
    # Ops alternate, and the runs stop once 25 s have passed: three ran, five are listed.
    assert ran == ["gemv.bf16", "qmv.affine", "gemv.bf16"]
    assert [r["verdict"] for r in rows] == ["agree"] * 3 + ["not compared"] * 5
    assert rows[3]["reason"] == "past the 25 s budget"
    assert ct.main([str(KEYS[0]), "b", "--budget", "0"]) == 2


def test_a_recheck_decides_a_key_that_differed(ct):
    a = {k: entry(k, "t:a") for k in KEYS[1:]}
    b = {k: entry(k, "t:b") for k in KEYS[1:]}
    first = {"rows=2": (10.0, 0.005, 10.5, 0.005),   # 5 %: differ, then agrees when rechecked
             "rows=3": (10.0, 0.005, 10.5, 0.005),   # 5 %: differ, and again
             "rows=4": (10.0, 0.005, 10.1, 0.005)}   # 1 %: agree, never rechecked
    second = {"rows=2": (10.0, 0.004, 10.05, 0.004), "rows=3": (10.0, 0.004, 10.4, 0.004)}
    rechecked = []

    def recheck(op, bucket, tactic):
        rechecked.append(bucket.split(",")[0])
        return second[bucket.split(",")[0]]

    rows = ct.compare(a, b, lambda op, bucket, tactic: first[bucket.split(",")[0]],
                      recheck=recheck)
    assert rechecked == ["rows=2", "rows=3"]
    assert [r["verdict"] for r in rows] == ["agree", "differ", "agree"]
    assert rows[0]["ratio"] == pytest.approx(1.005) and rows[0]["first_ratio"] == pytest.approx(1.05)
    assert rows[1]["ratio"] == pytest.approx(1.04) and "first_ratio" not in rows[2]
    report = ct.markdown(rows, 0, 0)
    assert "1.005 (1.050)" in report and "timed again" in report
    # A recheck that cannot run leaves the first verdict.
    rows = ct.compare(a, b, lambda op, bucket, tactic: first[bucket.split(",")[0]],
                      recheck=lambda *_: "bench failed")
    assert [r["verdict"] for r in rows] == ["differ", "differ", "agree"]
    assert all("first_ratio" not in r for r in rows)
    assert ct.main([KEYS[0], "b", "--recheck-samples", "3"]) == 2


def test_a_key_that_differs_names_its_cause(ct):
    keys = KEYS[1:]
    a = {k: dict(entry(k, "t:d"), default_tactic="t:d", ratio=1.0) for k in keys}
    b = dict(a)
    # rows=2: B took a challenger 2.5 % faster, A kept the default: the margin's edge.
    b[keys[0]] = dict(entry(keys[0], "t:c"), default_tactic="t:d", ratio=0.975)
    # rows=3: B took one 10 % faster, A kept the default: not at the edge.
    b[keys[1]] = dict(entry(keys[1], "t:c"), default_tactic="t:d", ratio=0.9)
    # rows=4: two challengers.
    a[keys[2]] = dict(entry(keys[2], "t:e"), default_tactic="t:d", ratio=0.8)
    b[keys[2]] = dict(entry(keys[2], "t:c"), default_tactic="t:d", ratio=0.85)
    rows = ct.compare(a, b, lambda *_: (10.0, 0.002, 9.7, 0.002))  # 3 % apart: differ
    assert [r["verdict"] for r in rows] == ["differ"] * 3
    assert rows[0]["cause"] == "at the switch margin: B took 0.975 of the default, A kept it"
    assert rows[1]["cause"] == "B took 0.900 of the default, A kept it"
    assert rows[2]["cause"] == "two challengers ordered differently"
    assert "differ: at the switch margin" in ct.markdown(rows, 0, 0)
    # Agreeing keys and entries that record no default name no cause.
    plain = {k: entry(k, "t:x") for k in keys}
    assert all("cause" not in r for r in ct.compare(plain, b, lambda *_: (10.0, 0.002, 9.7, 0.002)))
    assert all("cause" not in r for r in ct.compare(a, b, lambda *_: (10.0, 0.002, 10.0, 0.002)))
