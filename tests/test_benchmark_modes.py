"""The mode grammar of ``benchmarks.sysid_random_starts`` (pure Python: no compilation)."""

import pytest

from benchmarks.sysid_random_starts import base_mode, parse_mode, start_order


def test_recipe_modes_parse_into_their_stages():
    m = parse_mode("geometry+exact+trim+polish+smooth=1e-3:4")
    assert (m["kind"], m["geometry"], m["trim"], m["polish"]["kind"]) == ("exact", True, 0.1, "exact")
    assert m["smooth"] == {"sigma": 1e-3, "pairs": 4}
    c = parse_mode("geometry+exact+trim+polish+smooth=3e-3/1e-3:8")
    assert c["smooth"] == {"sigma": (3e-3, 1e-3), "pairs": 8}
    assert parse_mode("randomized:1e-3:16") == {"name": "randomized:1e-3:16", "kind": "randomized",
                                               "length": 1e-3, "pairs": 16}
    r = parse_mode("reflect+geometry+exact+trim+polish+smooth=1e-3:4+retrim")  # ε reflected in every stage
    assert r["reflect"] and r["geometry"] and r["retrim"] == 1 and r["smooth"] == {"sigma": 1e-3, "pairs": 4}
    assert "reflect" not in m
    assert parse_mode("schedule:random_start") == {"name": "schedule:random_start", "kind": "schedule",
                                                  "schedule": "RANDOM_START_SCHEDULE"}
    for bad in ("exact+smooth=1e-3", "exact+smooth=a/b:4", "relaxed", "exact+polishX", "reflect+", "schedule:nope"):
        with pytest.raises(SystemExit, match="bad mode"):
            parse_mode(bad)


def test_start_list_runs_exactly_the_given_starts_in_order():
    assert start_order("5,7,0", 1, 0, [50]) == [[5, 7, 0]]
    assert start_order(None, 2, 25, [2, 3]) == [[25, 26], [25, 26, 27]]
    for bad in ("", "3,3", "-1,2"):
        with pytest.raises(SystemExit, match="start-list"):
            start_order(bad, 1, 0, [50])
    with pytest.raises(SystemExit, match="one mode"):
        start_order("1,2", 2, 0, [50, 50])


def test_continue_from_finds_the_mode_a_longer_continuation_extends():
    names = {"g+exact+trim+polish", "g+exact+trim+polish+smooth=1e-3:4", "g+exact+trim+polish+smooth=1e-3/1e-3:4"}
    assert base_mode("g+exact+trim+polish+smooth=1e-3/1e-3/1e-3:4", names) == ("g+exact+trim+polish+smooth=1e-3/1e-3:4", 2, 0)
    assert base_mode("g+exact+trim+polish+smooth=1e-3/3e-3:4", names) == ("g+exact+trim+polish+smooth=1e-3:4", 1, 0)
    assert base_mode("g+exact+trim+polish+smooth=3e-3:4", names) == ("g+exact+trim+polish", 0, 0)
    # other pairs, another head, or no smoothing: nothing to continue
    assert base_mode("g+exact+trim+polish+smooth=1e-3/1e-3:8", names - {"g+exact+trim+polish"}) is None
    assert base_mode("h+exact+smooth=1e-3:4", names) is None
    assert base_mode("g+exact+trim+polish", names) is None
    # +retrim rounds (last): from the mode with fewer rounds, else from a shorter one
    assert base_mode("g+exact+trim+polish+smooth=1e-3/1e-3:4+retrim", names) == ("g+exact+trim+polish+smooth=1e-3/1e-3:4", 2, 0)
    assert base_mode("g+exact+trim+polish+retrim", names) == ("g+exact+trim+polish", 0, 0)
    assert base_mode("g+exact+trim+polish+smooth=1e-3/3e-3:4+retrim", names) == ("g+exact+trim+polish+smooth=1e-3:4", 1, 0)
    assert base_mode("g+exact+trim+polish+retrim+retrim+retrim", names | {"g+exact+trim+polish+retrim"}) == (
        "g+exact+trim+polish+retrim", 0, 1)
    m = parse_mode("geometry+exact+trim+polish+smooth=1e-3/1e-3:4+retrim+retrim")
    assert m["retrim"] == 2 and m["smooth"] == {"sigma": (1e-3, 1e-3), "pairs": 4} and m["trim"] == 0.1
    assert "retrim" not in parse_mode("geometry+exact+trim+polish")
