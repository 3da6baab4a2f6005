# The compiled order statistics (timeline/_select.c), an optional extension: timeline.detect picks
# them with numpy when it is not built.

from collections.abc import Sequence

from typing_extensions import Buffer

INTERFACE: int

def order_statistics(values: Buffer, ranks: Sequence[int], /) -> list[float]: ...
