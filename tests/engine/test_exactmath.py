"""The correctly rounded logarithms of engine/exactmath.py: the shipped table of log2 of whole numbers."""
from __future__ import annotations

import decimal
import math

import numpy as np

from bm25lab.engine import exactmath


def test_the_shipped_log2_table_is_the_computed_one_bit_for_bit() -> None:
    shipped = np.fromfile(exactmath.LOG2_TABLE_FILE, dtype="<f8")
    assert shipped.size == exactmath.LOG2_SHIPPED
    computed = np.array([exactmath.log2(float(i)) for i in range(exactmath.LOG2_SHIPPED)])
    assert shipped.tobytes() == computed.astype("<f8").tobytes()


def test_log2_of_integers_past_the_shipped_table_is_computed_the_same_way() -> None:
    values = np.array([0, 1, 2, 1000, exactmath.LOG2_SHIPPED - 1, exactmath.LOG2_SHIPPED, 10_007, 65_536])
    got = exactmath.log2_of_integers(values)
    assert got[0] == -math.inf and got[1] == 0.0 and got[-1] == 16.0
    assert got.tolist() == [exactmath.log2(float(v)) for v in values.tolist()]


def test_log2_is_exact_for_powers_of_two_and_within_half_an_ulp_elsewhere() -> None:
    context = decimal.Context(prec=60)
    for n in (3, 5, 7, 10, 1001, 4095):
        value = exactmath.log2(float(n))
        # 2**(value -+ half an ulp), in 60 digits, brackets n: value is the float nearest log2(n)
        half = decimal.Decimal(math.ulp(value) / 2)
        assert context.power(2, decimal.Decimal(value) - half) <= n <= context.power(2, decimal.Decimal(value) + half)
    assert exactmath.log2(1024.0) == 10.0


def test_each_gives_the_40_digit_logarithms_bit_for_bit_where_the_long_double_decides() -> None:
    rng = np.random.default_rng(7)
    df = np.arange(1, 4000, dtype=np.float64)
    values = np.concatenate([(150_000 - df + 0.5) / (df + 0.5), rng.uniform(0, 3e5, 3000),
                             10 ** rng.uniform(-300, 300, 2000), rng.uniform(1e-20, 1e-5, 1000),
                             [0.0, 1.0, 2.0, -0.5, -1.0, -2.0, math.inf, math.nan, 5e-324, 1e308]])
    for function in (exactmath.ln, exactmath.ln1p):
        got = exactmath.each(function, values)
        want = np.array([function.__wrapped__(v) for v in values.tolist()])
        assert got.tobytes() == want.tobytes()
