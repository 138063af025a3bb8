"""Three threads that reach step() together, and one that ticks meanwhile, for
tests/test_cli_threads.py (-i)."""

import threading
import time

barrier = threading.Barrier(3, timeout=120)
results = {}


def step(i):
    return i * 10


def run(i):
    barrier.wait()
    results[i] = step(i)


def ticking():
    # Goes on while the steppers are stopped (at most a minute).
    for n in range(3000):
        if len(results) == 3:
            break
        print("tick", n, flush=True)
        time.sleep(0.02)


threads = [threading.Thread(target=run, args=(i,), name=f"stepper-{i}") for i in range(3)]
threads.append(threading.Thread(target=ticking, name="ticker"))
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("results", sorted(results.values()))
