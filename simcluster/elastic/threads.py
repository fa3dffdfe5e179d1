"""One BLAS thread while elastic jobs are simulated.

The scaling models and the policies' cores call NumPy and SciPy on a handful of numbers at a time
(L-BFGS-B on seven parameters, an interpolation at one point, a goodput search over fifty batch sizes).
OpenBLAS wakes its threads for each such call; on a busy machine of two cores that made a Pollux run
several times slower.  The engine runs elastic jobs inside :func:`one_blas_thread` (fixed-size runs are
left as they are, so that their figures stay byte for byte what they were).
"""

from __future__ import annotations

from typing import Any

from threadpoolctl import ThreadpoolController

_CONTROLLER: ThreadpoolController | None = None  # found once: a controller's search of the loaded libraries is slow


def one_blas_thread() -> Any:
    """A context manager: BLAS on one thread inside it, as before outside.

    >>> with one_blas_thread():
    ...     pass
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")
