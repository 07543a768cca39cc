"""The mode grammar of ``benchmarks.sysid_random_starts`` (pure Python: no compilation)."""

import pytest

from benchmarks.sysid_random_starts import parse_mode, start_order


def test_recipe_modes_parse_into_their_stages():
    m = parse_mode("geometry+exact+trim+polish+smooth=1e-3:4")
    assert (m["kind"], m["geometry"], m["trim"], m["polish"]["kind"]) == ("exact", True, 0.1, "exact")
    assert m["smooth"] == {"sigma": 1e-3, "pairs": 4}
    c = parse_mode("geometry+exact+trim+polish+smooth=3e-3/1e-3:8")
    assert c["smooth"] == {"sigma": (3e-3, 1e-3), "pairs": 8}
    assert parse_mode("randomized:1e-3:16") == {"name": "randomized:1e-3:16", "kind": "randomized",
                                               "length": 1e-3, "pairs": 16}
    for bad in ("exact+smooth=1e-3", "exact+smooth=a/b:4", "relaxed", "exact+polishX"):
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
