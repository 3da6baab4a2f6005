"""timeline.collector.uncollected: what a reading made is not walked again and again."""

from __future__ import annotations

import gc

from timeline.collector import uncollected


def test_what_a_reading_made_is_put_with_the_oldest_objects_and_nothing_stays_frozen():
    thresholds = gc.get_threshold()
    gc.set_threshold(1_000_000)  # no collection of its own while the test looks
    try:
        with uncollected():
            assert not gc.isenabled()
            made = [[n] for n in range(1000)]
        assert gc.isenabled()
        young = {id(o) for o in gc.get_objects(0)} | {id(o) for o in gc.get_objects(1)}
        assert not young & {id(item) for item in made}  # none left to a young collection to walk
        assert {id(item) for item in made} <= {id(o) for o in gc.get_objects(2)}
        assert gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*thresholds)


def test_objects_the_process_froze_itself_stay_frozen():
    kept = [[n] for n in range(10)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with uncollected():
            made = [[n] for n in range(1000)]
        assert gc.get_freeze_count() == frozen and gc.isenabled()
        assert len(made) == 1000 and kept
    finally:
        gc.unfreeze()
