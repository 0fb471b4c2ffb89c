"""`runend.Halt`: a `zapcli run` counts a signal from the moment it is sent,
not from the moment its main thread's Python handler runs (that waits for
the GIL, which the thread that has just read a person's answer holds). Each
route is made certain with a real signal to a real thread: still pending in
the kernel, caught by the interpreter's C handler but not yet handled."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator

import pytest

from zapcli.cli.runend import Halt, HungUp, Terminated


def _in_thread(body: Callable[[], object]) -> object:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(body()))
    thread.start()
    thread.join(10)
    assert out, "the thread did not finish"
    return out[0]


@pytest.fixture
def armed() -> Iterator[Halt]:
    """A Halt watching SIGUSR1 and SIGUSR2 (stand-ins for the run's signals:
    pytest owns SIGINT), whose Python handlers do nothing, so nothing but
    the kernel's pending set and the C handler's byte can tell it."""
    before = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGUSR1, signal.SIGUSR2)}
    halt = Halt()
    halt.arm((signal.SIGUSR1, signal.SIGUSR2))
    try:
        yield halt
    finally:
        halt.disarm()
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_nothing_sent_is_not_a_stop(armed: Halt) -> None:
    assert _in_thread(armed.is_set) is False
    assert armed.is_set() is False


def test_a_signal_pending_in_the_kernel_is_a_stop(armed: Halt) -> None:
    """Sent to a thread that blocks it: no handler has run anywhere."""
    def body() -> tuple[bool, bool]:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        assert signal.SIGUSR1 in signal.sigpending()
        seen = armed.is_set()
        still = signal.SIGUSR1 in signal.sigpending()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        return seen, still

    seen, still = _in_thread(body)  # type: ignore[misc]
    assert still, "it was seen while still pending, before any handler"
    assert seen and armed.signum == signal.SIGUSR1


def test_a_signal_caught_but_not_yet_handled_is_a_stop(armed: Halt) -> None:
    """Delivered to this thread: the C handler has run as the call returns;
    the Python handler (a no-op here) sets nothing."""
    def body() -> bool:
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR2)
        return armed.is_set()

    assert _in_thread(body) is True
    assert armed.signum == signal.SIGUSR2
    assert armed.is_set(), "seen once, it stays seen"


def test_a_signal_it_does_not_watch_is_not_a_stop(armed: Halt) -> None:
    before = signal.signal(signal.SIGWINCH, lambda *_: None)
    try:
        def body() -> bool:
            signal.pthread_kill(threading.get_ident(), signal.SIGWINCH)
            return armed.is_set()

        assert _in_thread(body) is False
    finally:
        signal.signal(signal.SIGWINCH, before)


def test_the_run_ends_on_it_once_and_by_the_signal_it_was() -> None:
    halt = Halt()
    halt.set(signal.SIGTERM)
    halt.set(signal.SIGINT)
    assert isinstance(halt.exception(), Terminated)
    assert halt.claim() is True and halt.claim() is False
    hup = Halt()
    hup.set(signal.SIGHUP)
    assert isinstance(hup.exception(), HungUp)
    assert isinstance(Halt().exception(), KeyboardInterrupt)


def test_disarm_gives_the_wakeup_fd_back(armed: Halt) -> None:
    armed.disarm()
    assert signal.set_wakeup_fd(-1) == -1


def test_confirmed_asks_the_main_thread_and_never_hangs(armed: Halt) -> None:
    """`confirmed` waits for the main thread (serving in `wait`) to run once;
    with nobody serving it answers at once."""
    seen: list[bool] = []

    def body() -> None:
        seen.append(armed.confirmed())
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        seen.append(armed.confirmed())

    worker = threading.Thread(target=armed.poking(body))
    worker.start()
    armed.wait(worker, 10)
    worker.join(10)
    assert seen == [False, True]
    assert _in_thread(lambda: Halt().confirmed(wait_s=30)) is False  # nobody serves: no wait
