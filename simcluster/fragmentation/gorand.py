"""Go's ``math/rand``, bit for bit: the generator FGD's simulator draws its workload with.

FGD's simulator (Go) seeds the global generator with the study's seed, then shuffles the pods,
resamples pods until the demand reaches its target and names the nodes with a random permutation
(which breaks score ties).  Drawing the same numbers makes a seed here the same workload, in the same
order, as that seed there, so results can be compared seed by seed, not only in distribution.

Only what the study calls is here: ``Seed``, ``Int63`` (also Go's ``Int`` on 64 bits), ``Intn``, ``Float64``, ``Perm`` and
``Shuffle``, each the algorithm of Go 1.19's ``rand.Rand`` (the same through Go 1.21).

>>> rng = GoRand(42)
>>> [rng.intn(10) for _ in range(5)]
[5, 7, 8, 0, 3]
"""

from __future__ import annotations

from collections.abc import Callable

from simcluster.fragmentation._go_rng_table import RNG_COOKED

_LEN, _TAP = 607, 273
_MASK63 = (1 << 63) - 1
_MASK64 = (1 << 64) - 1
_INT32_MAX = (1 << 31) - 1


def _seedrand(x: int) -> int:
    """One step of the Park–Miller generator that spreads the seed (Go's ``seedrand``)."""
    hi, lo = int(x / 44488), x - int(x / 44488) * 44488  # Go's int32 division truncates toward zero
    x = 48271 * lo - 3399 * hi
    return x + _INT32_MAX if x < 0 else x


def _int64(u: int) -> int:
    u &= _MASK64
    return u - (1 << 64) if u >> 63 else u


class GoRand:
    """A seeded ``rand.Rand`` of Go (``rand.New(rand.NewSource(seed))``, or the global one after ``rand.Seed``)."""

    def __init__(self, seed: int) -> None:
        seed %= _INT32_MAX
        if seed == 0:
            seed = 89482311
        x = seed
        vec = [0] * _LEN
        for i in range(-20, _LEN):
            x = _seedrand(x)
            if i >= 0:
                u = x << 40
                x = _seedrand(x)
                u ^= x << 20
                x = _seedrand(x)
                u ^= x
                vec[i] = _int64(u ^ RNG_COOKED[i])
        self._vec = vec
        self._tap = 0
        self._feed = _LEN - _TAP

    def uint64(self) -> int:
        self._tap = self._tap - 1 if self._tap else _LEN - 1
        self._feed = self._feed - 1 if self._feed else _LEN - 1
        x = _int64(self._vec[self._feed] + self._vec[self._tap])
        self._vec[self._feed] = x
        return x & _MASK64

    def int63(self) -> int:
        return self.uint64() & _MASK63

    def int31(self) -> int:
        return self.int63() >> 32

    def uint32(self) -> int:
        return (self.int63() >> 31) & 0xFFFFFFFF

    def int31n(self, n: int) -> int:
        """Go's ``Int31n`` (rejection sampling; a power of two is masked)."""
        if n <= 0:
            raise ValueError("invalid argument to Int31n")
        if n & (n - 1) == 0:
            return self.int31() & (n - 1)
        top = _INT32_MAX - (1 << 31) % n
        v = self.int31()
        while v > top:
            v = self.int31()
        return v % n

    def intn(self, n: int) -> int:
        if n > _INT32_MAX:
            raise ValueError("Intn beyond int32 is not needed here")
        return self.int31n(n)

    def float64(self) -> float:
        while True:
            f = self.int63() / (1 << 63)
            if f != 1.0:
                return f

    def _int31n_lemire(self, n: int) -> int:
        """Go's unexported ``int31n`` (Lemire's multiply-shift), which ``Shuffle`` uses."""
        prod = self.uint32() * n
        low = prod & 0xFFFFFFFF
        if low < n:
            thresh = ((1 << 32) - n) % n
            while low < thresh:
                prod = self.uint32() * n
                low = prod & 0xFFFFFFFF
        return prod >> 32

    def perm(self, n: int) -> list[int]:
        m = [0] * n
        for i in range(n):
            j = self.intn(i + 1)
            m[i] = m[j]
            m[j] = i
        return m

    def shuffle(self, n: int, swap: Callable[[int, int], None]) -> None:
        for i in range(n - 1, 0, -1):
            swap(i, self._int31n_lemire(i + 1))

    def shuffled(self, items: list) -> list:  # type: ignore[type-arg]
        """``items`` in the order ``rand.Shuffle`` leaves them (a new list)."""
        out = list(items)

        def swap(i: int, j: int) -> None:
            out[i], out[j] = out[j], out[i]

        self.shuffle(len(out), swap)
        return out
