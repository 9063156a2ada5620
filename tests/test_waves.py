"""Rollout waves (arcops.fleet.waves): batches as Ansible's serial makes them, and the problems
that refuse a rollout before it starts."""

import pytest
from arcops.fleet import waves
from hypothesis import given
from hypothesis import strategies as st

BOXES = [f"arc-{n:02d}" for n in range(1, 11)]


@pytest.mark.parametrize(
    ("serial", "sizes"),
    [
        ([1, "25%"], [1, 2, 2, 2, 2]),  # 25% of 9 is 2.25: 2 (rounded down)
        ([1], [1] * 9),
        (["50%"], [4, 4, 1]),
        ([2, 3, "100%"], [2, 3, 4]),
        (["1%"], [1] * 9),  # at least one box
    ],
)
def test_batches_follow_ansible_s_serial(serial, sizes):
    assert [len(b) for b in waves.batches(BOXES[1:], serial)] == sizes


def test_waves_are_the_canary_one_at_a_time_then_the_fleet_in_batches():
    plan = waves.waves({"canary": BOXES[:2], "fleet": BOXES[2:]}, BOXES, [1, "50%"])
    assert [(w["wave"], w["batch"], len(w["hosts"])) for w in plan] == [
        ("canary", 1, 1),
        ("canary", 2, 1),
        ("fleet", 1, 1),
        ("fleet", 2, 4),
        ("fleet", 3, 3),
    ]
    assert waves.wave_of(plan)["arc-10"] == "fleet 3"


def test_a_box_in_two_waves_or_none_is_refused_with_every_problem():
    with pytest.raises(waves.WavesError) as e:
        waves.waves({"canary": ["arc-01", "arc-02"], "fleet": ["arc-02", "arc-09"]}, BOXES[:3], [0, "150%"])
    assert e.value.problems == [
        "arcops_rollout_serial[0]: 0 is not a count of at least 1 or a percentage like '25%'",
        "arcops_rollout_serial[1]: '150%' is not a count of at least 1 or a percentage like '25%'",
        "arc-02: in both the canary and the fleet wave",
        "arc-03: an Arc box (arc_servers) in no wave: put it in canary or fleet",
        "arc-09: in a wave but not in arc_servers",
    ]
    with pytest.raises(waves.WavesError, match="the canary group is empty"):
        waves.waves({"fleet": BOXES}, BOXES, [1])


@given(
    st.lists(st.sampled_from(BOXES), unique=True),
    st.lists(st.integers(1, 5) | st.sampled_from(["10%", "25%", "50%", "100%"]), min_size=1, max_size=4),
)
def test_every_box_gets_exactly_one_turn_in_order(hosts, serial):
    out = waves.batches(hosts, serial)
    assert [h for b in out for h in b] == hosts and all(out)


@given(
    st.one_of(st.none(), st.text(), st.lists(st.one_of(st.integers(), st.text(), st.booleans(), st.floats())))
)
def test_any_serial_is_refused_or_usable(serial):
    if not waves.check_serial(serial):
        assert waves.batches(BOXES, serial)
