"""The job lock: one holder, owner-only release, TTL on death, renewal while slow."""

import threading
import time

from analytics.store.locks import Lock, held


def test_two_workers_at_once_exactly_one_runs(r):
    ran, barrier = [], threading.Barrier(2)

    def job(name):
        barrier.wait()
        with held(r, "tally:{1}:lock:rollup", ttl_ms=5000) as lock:
            if lock:
                ran.append(name)
                time.sleep(0.3)

    threads = [threading.Thread(target=job, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ran) == 1
    assert not r.exists("tally:{1}:lock:rollup")


def test_a_dead_holders_lock_frees_after_its_ttl(r):
    dead = Lock(r, "tally:{1}:lock:job", ttl_ms=200)
    assert dead.acquire()  # ... and the worker dies: no release, no watchdog
    assert not Lock(r, "tally:{1}:lock:job").acquire()
    time.sleep(0.3)
    assert Lock(r, "tally:{1}:lock:job").acquire()


def test_a_slow_holder_keeps_its_lock_by_renewal(r):
    with held(r, "tally:{1}:lock:slow", ttl_ms=600) as lock:
        time.sleep(2.0)  # over three TTLs
        assert r.get("tally:{1}:lock:slow") == lock.token.encode()
        assert not Lock(r, "tally:{1}:lock:slow").acquire()
        assert not lock.lost
    assert not r.exists("tally:{1}:lock:slow")


def test_a_late_release_never_deletes_someone_elses_lock(r):
    late = Lock(r, "tally:{1}:lock:job", ttl_ms=100)
    assert late.acquire()
    time.sleep(0.2)  # expired
    other = Lock(r, "tally:{1}:lock:job", ttl_ms=5000)
    assert other.acquire()
    assert late.release() is False
    assert r.get("tally:{1}:lock:job") == other.token.encode()
    assert not late.renew()
    assert other.release() is True
