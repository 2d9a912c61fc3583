"""bench/side_by_side.py's accounting: the minutes each run ran, from its turns and its train.log."""

import datetime as dt

from bench.side_by_side import active_seconds, evaluations, table


def stamp(seconds: float) -> str:
    """A train.log timestamp `seconds` after 2026-12-01 20:00:00 UTC."""
    t = dt.datetime(2026, 12, 1, 20, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


T0 = dt.datetime(2026, 12, 1, 20, tzinfo=dt.UTC).timestamp()


def test_active_seconds_sums_the_turns_up_to_a_time():
    turns = [(0.0, 10.0), (20.0, 30.0), (40.0, 50.0)]
    assert active_seconds(turns, 5.0) == 5.0
    assert active_seconds(turns, 15.0) == 10.0  # waiting between turns does not count
    assert active_seconds(turns, 25.0) == 15.0
    assert active_seconds(turns, 100.0) == 30.0
    assert active_seconds([], 100.0) == 0.0


def test_evaluations_reads_only_the_evaluation_lines():
    log = "\n".join([
        f"{stamp(12.5)} step     50/2400  loss 8.119  lr 3.33e-04  1,144 tok/s  grad 1.29  ETA 159.0 min",
        f"{stamp(61.25)} eval at step 300: dev_loss 4.13  dev_bleu 3.97  dev_chrf 17.34  dev_exact 0.00",
        "a line without a timestamp",
        f"{stamp(125.0)} eval at step 600: dev_loss 3.06  dev_bleu 12.52  dev_chrf 33.55  dev_exact 0.00",
    ])
    assert evaluations(log) == [(T0 + 61.25, 300, 4.13, 3.97), (T0 + 125.0, 600, 3.06, 12.52)]


def test_table_gives_each_run_its_own_minutes_and_the_ratio(tmp_path):
    runs = {name: tmp_path / name for name in ("after", "before")}
    for path in runs.values():
        path.mkdir()
    # after: evaluated at 120 s and 360 s of wall time, having run 0-120 and 240-360: 2 and 4 minutes
    (runs["after"] / "train.log").write_text(
        f"{stamp(120)} eval at step 300: dev_loss 4.00  dev_bleu 4.00  dev_chrf 1\n"
        f"{stamp(360)} eval at step 600: dev_loss 3.00  dev_bleu 12.00  dev_chrf 1\n")
    # before: ran 120-240 and 360-540, evaluated at 240 s (2 minutes) and 540 s (5 minutes); step 900 only here
    (runs["before"] / "train.log").write_text(
        f"{stamp(240)} eval at step 300: dev_loss 4.10  dev_bleu 3.50  dev_chrf 1\n"
        f"{stamp(540)} eval at step 600: dev_loss 3.10  dev_bleu 11.00  dev_chrf 1\n"
        f"{stamp(600)} eval at step 900: dev_loss 2.50  dev_bleu 15.00  dev_chrf 1\n")
    turns = {"after": [(T0, T0 + 120), (T0 + 240, T0 + 360)],
             "before": [(T0 + 120, T0 + 240), (T0 + 360, T0 + 600)]}
    lines = table(runs, turns).splitlines()
    assert lines[2:] == ["| 300 | 2.0 | 4.00, 4.00 | 2.0 | 4.10, 3.50 | 1.000 |",
                         "| 600 | 4.0 | 3.00, 12.00 | 5.0 | 3.10, 11.00 | 1.250 |"]
