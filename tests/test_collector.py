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


def test_the_command_and_numpy_are_imported_straight_into_the_oldest_generation(tmp_path):
    """The console entry point (``timeline.__main__``) imports the command line, the command its
    modules and the fast path numpy, each with the collector held off: their modules' objects
    are put with the oldest at once. With no collection of the process's own to move them, the
    entry point is what put them there."""
    import subprocess
    import sys
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "sglang" / "sglang-0.5-eagle3.log"
    log = tmp_path / "big.log"
    log.write_bytes(fixture.read_bytes() * (1 + (64 << 10) // fixture.stat().st_size))  # the fast path's size
    program = (
        "import atexit, gc, sys\n"
        "gc.set_threshold(1_000_000_000)\n"
        "def oldest():\n"
        "    old = {id(o) for o in gc.get_objects(2)}\n"
        "    for name in ('typer', 'timeline.cli', 'timeline.commands.build', 'numpy'):\n"
        "        print(name, id(vars(sys.modules[name])) in old)\n"
        "atexit.register(oldest)\n"
        f"sys.argv = ['timeline', 'build', {str(log)!r}, '--json', '/dev/null', '--no-cache']\n"
        "from timeline.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-4:] == [
        "typer True",
        "timeline.cli True",
        "timeline.commands.build True",
        "numpy True",
    ]
