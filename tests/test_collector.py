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


def test_an_answer_is_held_to_exit_only_for_the_console_entry_point(monkeypatch):
    import weakref

    from timeline import collector

    class Answer:
        pass

    answer = Answer()
    gone = weakref.ref(answer)
    collector.hold_to_exit(answer)  # a library caller, a test's CliRunner: freed as usual
    del answer
    assert gone() is None
    collector.exit_unfreed(0)  # nothing held: returns, for the usual exit

    monkeypatch.setattr(collector, "_held", None)
    collector.holding_to_exit()  # what timeline.cli.main does first
    answer = Answer()
    held = weakref.ref(answer)
    collector.hold_to_exit(answer)
    del answer
    assert held() is not None
    collector.exit_unfreed("timeline: a message")  # a message, not a status: the usual exit prints it
