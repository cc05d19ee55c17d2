"""The episode / recovery arithmetic on synthetic series: plain episodes, gaps, bridging, counter
resets, recovery held back by the p99, and episodes that never end or never recover."""

import pytest

from fabric_exporter.report.episodes import (Episode, baseline, counter_increase, find_episodes, fresh_ratio,
                                             state_changes, with_recovery)

STEP = 10.0


def series(values, start=0.0, step=STEP):
    """None = no sample at that step (a gap)."""
    return [(start + i * step, v) for i, v in enumerate(values) if v is not None]


def test_one_episode_start_end_duration():
    sev = series([0.1, 0.1, 2.0, 3.0, 2.5, 0.8, 0.3, 0.1, 0.1])
    (ep,) = find_episodes(sev, STEP, bridge_gap=0)
    assert (ep.start, ep.end, ep.peak_severity, ep.end_observed) == (20.0, 50.0, 3.0, True)
    assert ep.duration_seconds == 30.0


def test_threshold_is_strictly_above_one():
    assert find_episodes(series([1.0, 1.0, 1.0]), STEP, 0) == []


def test_two_episodes_apart_and_bridged():
    sev = series([0.1, 2, 2, 0.1, 0.1, 0.1, 2, 0.1, 0.1])
    assert [(e.start, e.end) for e in find_episodes(sev, STEP, bridge_gap=0)] == [(10, 30), (60, 70)]
    # quiet for 40 s between: a 40 s bridge makes it one episode
    assert [(e.start, e.end) for e in find_episodes(sev, STEP, bridge_gap=40)] == [(10, 70)]


def test_a_short_gap_inside_an_episode_is_bridged_a_long_one_splits_it():
    sev = series([0.1, 2, 2, None, 2, 2, 0.1])
    assert [(e.start, e.end) for e in find_episodes(sev, STEP, bridge_gap=20)] == [(10, 60)]
    sev = series([0.1, 2, 2, None, None, None, None, 2, 0.1])
    eps = find_episodes(sev, STEP, bridge_gap=20)
    # the first one's end is inside the gap: cut at its last congested sample + one step, not observed
    assert [(e.start, e.end, e.end_observed) for e in eps] == [(10, 30, False), (70, 80, True)]


def test_episode_open_at_window_end():
    (ep,) = find_episodes(series([0.1, 0.1, 3, 3]), STEP, 0)
    assert (ep.start, ep.end, ep.end_observed) == (20, 40, False)


def test_nan_samples_are_gaps():
    assert find_episodes(series([0.1, float("nan"), 0.1]), STEP, 0) == []


def test_recovery_waits_for_signal_and_p99():
    #        0    10   20  30  40   50   60   70   80   90   100  110
    sev = series([0.1, 0.1, 3, 3, 0.9, 0.5, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1])
    p99 = series([2.0, 2.0, 9, 9, 8.0, 6.0, 5.0, 3.0, 2.2, 2.0, 2.1, 2.0])
    eps = find_episodes(sev, STEP, 0)
    (ep,) = with_recovery(eps, sev, p99, STEP, margin=0.2)
    # baselines: severity 0.1, p99 2.0 (medians outside the episode); the end is at 40 s;
    # severity <= 0.3 from 60 s, p99 <= 2.4 from 80 s, held for 2 samples: recovered at 80 s
    assert ep.end == 40 and ep.recovered_at == 80 and ep.recovery_seconds == 40


def test_recovery_on_signals_alone_without_latency_data():
    sev = series([0.1, 0.1, 3, 3, 0.9, 0.2, 0.1, 0.1])
    (ep,) = with_recovery(find_episodes(sev, STEP, 0), sev, [], STEP, margin=0.2)
    assert ep.recovered_at == 50 and ep.recovery_seconds == 10


def test_recovery_needs_the_hold_and_a_gap_breaks_it():
    sev = series([0.1, 0.1, 3, 0.1, 0.9, 0.1, None, 0.1, 0.1, 0.1])
    (ep,) = with_recovery(find_episodes(sev, STEP, 0), sev, [], STEP, margin=0.2, hold=2)
    # 30 ok, 40 bad, 50 ok, gap at 60, 70 ok, 80 ok -> recovered at 70
    assert ep.end == 30 and ep.recovered_at == 70


def test_not_recovered_before_the_next_episode_or_the_end():
    sev = series([0.1, 3, 0.9, 0.9, 3, 0.9, 0.9])
    eps = with_recovery(find_episodes(sev, STEP, 0), sev, [], STEP, margin=0.2, severity_baseline=0.1)
    assert [e.recovered_at for e in eps] == [None, None]
    assert eps[0].recovery_seconds is None


def test_p99_gap_at_a_candidate_instant_is_not_recovered():
    sev = series([0.1, 3, 0.1, 0.1, 0.1, 0.1])
    p99 = series([2.0, 9, None, 2.0, 2.0, 2.0])
    (ep,) = with_recovery(find_episodes(sev, STEP, 0), sev, p99, STEP, margin=0.2)
    assert ep.end == 20 and ep.recovered_at == 30


def test_baseline_ignores_episode_samples():
    sev = series([0.2, 5, 5, 5, 5, 0.4])
    eps = find_episodes(sev, STEP, 0)
    assert baseline(sev, eps) == pytest.approx(0.3)
    assert baseline([], eps) is None


def test_counter_increase_across_resets_and_gaps():
    assert counter_increase(series([0, 1, 1, 3])) == 3
    # reset to 0 after 5, then 2 more: 5 + 2
    assert counter_increase(series([0, 2, 5, 0, 2])) == 7
    # reset straight to 1 (the restart counted one event): 4 + 1 + 1
    assert counter_increase(series([1, 5, 1, 2])) == 6
    # a gap is spanned by the next sample
    assert counter_increase(series([0, None, None, 4, 4])) == 4
    assert counter_increase([]) == 0 and counter_increase(series([7])) == 0


def test_state_changes_counts_downs_only():
    assert state_changes(series([1, 1, 2, 2, 1, 2, 1])) == 2
    assert state_changes(series([2, 2, 1])) == 0


def test_fresh_ratio_counts_gaps_and_zeros_as_not_fresh():
    up = series([1, 1, 0, None, 1, 1, 1, 1, 1, 1, 1])  # 11 steps in [0, 100]
    assert fresh_ratio(up, 0, 100, STEP) == pytest.approx(9 / 11)
    assert fresh_ratio([], 0, 100, STEP) == 0


def test_episode_dataclass_properties():
    e = Episode(10, 40, 3, True, None)
    assert e.duration_seconds == 30 and e.recovery_seconds is None
