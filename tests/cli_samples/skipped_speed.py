"""Whether code `locals` filters out runs with the hook stepped aside (3.12+)."""

import threading

import pyframe


def skipped():
    return pyframe._cframe._specialization_aside()


def reported(x):
    return x


print("specialization", pyframe.specialization_enabled())
print("aside alone", skipped())
reported(1)
thread = threading.Thread(target=lambda: print("aside in a second thread", skipped()))
thread.start()
thread.join()
