# The compiled order statistics and exact sums (timeline/_select.c), an optional extension:
# timeline.detect works them out with numpy when it is not built (exact_sums: nor where the C
# compiler has no 128-bit integers).

from collections.abc import Sequence

from typing_extensions import Buffer

INTERFACE: int

def order_statistics(values: Buffer, ranks: Sequence[int], /) -> list[float]: ...
def exact_sums(values: Buffer, /) -> tuple[int, int, int]: ...
