"""The export semaphore: the limit holds under concurrency, dead holders free their slot,
first come first served."""

import threading
import time

from analytics.store.semaphore import Semaphore


def test_the_limit_holds_under_concurrency(r):
    sem = Semaphore(r, limit=2, timeout=30)
    holding, peak, lock = set(), [0], threading.Lock()

    def worker(n):
        token = f"job-{n}"
        while sem.acquire(token) != 0:
            time.sleep(0.01)
        with lock:
            holding.add(token)
            peak[0] = max(peak[0], len(holding))
        time.sleep(0.05)
        with lock:
            holding.discard(token)
        sem.release(token)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2


def test_first_come_first_served(r):
    sem = Semaphore(r, limit=1, timeout=30)
    assert sem.acquire("a") == 0
    assert sem.acquire("b") == 1
    assert sem.acquire("c") == 2
    assert sem.acquire("b") == 1  # asking again keeps one's place
    sem.release("a")
    assert sem.acquire("c") == 1  # c may not jump b
    assert sem.acquire("b") == 0


def test_a_dead_holders_slot_frees_itself(r):
    sem = Semaphore(r, limit=1, timeout=10)
    assert sem.acquire("crashed", now=1000.0) == 0
    assert sem.acquire("next", now=1005.0) == 1
    assert sem.acquire("next", now=1011.0) == 0  # "crashed" was not seen for 11 s
    assert sem.release("crashed") is False
