"""offconv.model.inttable.IntTable reads and changes as a dict of int -> int does (the analysis
keeps a creator per task and a record position per ended thread in it)."""
from __future__ import annotations

import pickle
import random

import pytest

from offconv.model.inttable import IntTable


def _check(t: IntTable, d: dict) -> None:
    assert len(t) == len(d) and bool(t) == bool(d)
    assert dict(t.items()) == d and sorted(map(repr, t)) == sorted(map(repr, d))
    for k, v in d.items():
        assert k in t and t[k] == v and t.get(k) == v


@pytest.mark.parametrize("typecode", ["i", "q"])
def test_a_random_mix_of_inserts_updates_and_removals_matches_a_dict(typecode):
    rng = random.Random(14)
    t, d = IntTable(typecode=typecode), {}
    keys = [rng.randrange(1 << 22) for _ in range(3000)] + list(range(2000)) + [1 << 40, 1 << 62]
    for step in range(40000):
        k = rng.choice(keys)
        op = rng.random()
        if op < 0.6:
            v = rng.randrange(-(1 << 63), 1 << 63) if rng.random() < 0.2 else rng.randrange(1 << 31)
            t[k] = v
            d[k] = v
        elif op < 0.9:
            assert t.pop(k, "none") == d.pop(k, "none")
        else:
            assert t.get(k, "none") == d.get(k, "none")
        if step % 5000 == 0:
            _check(t, d)
    _check(t, d)
    assert len(t._keys) <= 8 * max(len(d), 1)    # removed keys' slots go when it grows


def test_keys_and_values_it_cannot_hold_in_int64_go_beside_it():
    t = IntTable()
    t[-1] = 5
    t[(0, 3)] = 6                                  # the idle task's key
    t[7] = 1 << 40                                 # beyond int32
    t[8] = "x"
    t[9] = 9
    assert dict(t.items()) == {-1: 5, (0, 3): 6, 7: 1 << 40, 8: "x", 9: 9}
    t[7] = 3                                       # back into the arrays
    assert t[7] == 3 and len(t) == 5 and t._n == 2
    with pytest.raises(KeyError):
        t[10]
    with pytest.raises(KeyError):
        t.pop(10)
    assert 10 not in t and "a" not in t and t.get("a") is None


def test_it_updates_a_dict_and_is_updated_by_one_and_pickles():
    t = IntTable({5: 1, 6: 2})
    d = {1: 1}
    d.update(t)
    assert d == {1: 1, 5: 1, 6: 2}
    t.update([(7, 3)])
    t.update({8: 4})
    assert t == {5: 1, 6: 2, 7: 3, 8: 4}
    assert pickle.loads(pickle.dumps(t)) == t
