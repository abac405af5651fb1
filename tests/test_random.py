"""The C++ generator's raw words against numpy's own Philox4x64-10.

RandomStream(seed, stream) (cpp/core/runtime/random.hpp) uses the key {seed, stream}
and the counters {0, 0, 0, 0}, {1, 0, 0, 0}, ..., and returns the four words of
each block in order. numpy.random.Philox reads an integer key with its low
64 bits as key[0], and adds one to the 256-bit counter *before* it computes a
block (and carries), so the counter 2**256 - 1 makes its first block the one at
counter 0. numpy's Philox is an independent implementation (its own C code),
so agreement checks our rounds, key schedule, word order and counter layout.
"""

import numpy as np
import pytest

from smoothece import _core


def numpy_words(seed: int, stream: int, n: int) -> np.ndarray:
    return np.random.Philox(key=seed + (stream << 64), counter=2**256 - 1).random_raw(n)


@pytest.mark.parametrize(
    "seed, stream",
    [
        (0, 0),
        (1, 0),
        (0, 1),
        (20240607, 3),
        (2**64 - 1, 0),
        (0, 2**64 - 1),
        (2**64 - 1, 2**64 - 1),
        (0x243F6A8885A308D3, 0x13198A2E03707344),
    ],
)
def test_raw_words_equal_numpy_philox(seed, stream):
    ours = _core.philox_raw(seed, stream, 1003)  # a partial last block too
    assert ours.dtype == np.uint64
    assert ours.shape == (1003,)
    np.testing.assert_array_equal(ours, numpy_words(seed, stream, 1003))


def test_first_block_is_the_random123_known_answer():
    # philox4x64_10(counter = 0, key = 0), from Random123's tests/kat_vectors.
    expected = [0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B]
    assert _core.philox_raw(0, 0, 4).tolist() == expected


def test_shorter_runs_are_prefixes():
    full = _core.philox_raw(99, 7, 64)
    for n in (0, 1, 4, 5, 63):
        np.testing.assert_array_equal(_core.philox_raw(99, 7, n), full[:n])
