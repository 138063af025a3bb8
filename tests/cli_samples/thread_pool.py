"""A ThreadPoolExecutor map, for tests/test_cli_threads.py."""

from concurrent.futures import ThreadPoolExecutor


def square(n):
    return n * n


def lookup(key, n=0):
    return len(key) + n


with ThreadPoolExecutor(max_workers=2, thread_name_prefix="pool") as pool:
    print(sorted(pool.map(square, range(5))))
print(lookup("user:ada", 40), lookup("admin", 1))
