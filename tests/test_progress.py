"""Progress lines for logs: counts, elapsed time and ETA, throttled, always the final line."""

import io

from amc.progress import LineProgress, progress_bar


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_lines_say_done_total_elapsed_and_eta_and_are_throttled() -> None:
    out, clock = io.StringIO(), Clock()
    bar = LineProgress(5, initial=1, desc="bon@4 s0", every_s=30, file=out, clock=clock)
    clock.t = 10.0
    bar.update()  # 2/5 after 10 s: within the interval, no line yet
    assert out.getvalue() == ""
    clock.t = 40.0
    bar.update()  # 3/5: 2 done in 40 s -> 20 s each, 2 to go
    assert out.getvalue() == "bon@4 s0: 3/5 tasks, 40 s, ETA 40 s\n"
    clock.t = 45.0
    bar.update()
    bar.update()  # the last one always prints
    assert out.getvalue().splitlines()[-1] == "bon@4 s0: 5/5 tasks, 45 s, ETA 0 s"
    assert len(out.getvalue().splitlines()) == 2


def test_a_log_gets_lines_and_a_disabled_bar_prints_nothing() -> None:
    out = io.StringIO()  # not a terminal
    assert isinstance(progress_bar(3, 0, "x", enabled=True, file=out), LineProgress)
    quiet = progress_bar(3, 0, "x", enabled=False, file=out)
    quiet.update()
    quiet.close()
    assert out.getvalue() == ""


def test_heartbeat_lines_while_nothing_finishes_and_none_after_close() -> None:
    import threading

    class Out(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.seen = threading.Event()

        def write(self, s: str) -> int:
            self.seen.set()
            return super().write(s)

    out = Out()
    bar = LineProgress(4, desc="smc@4 s1", every_s=0.01, file=out, heartbeat=True)
    assert out.seen.wait(10)  # a line although no task finished
    bar.close()
    assert out.getvalue().startswith("smc@4 s1: 0/4 tasks, ") and "ETA unknown" in out.getvalue()
