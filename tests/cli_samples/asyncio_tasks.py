"""An asyncio program with three tasks, for tests/test_cli_threads.py."""

import asyncio


async def fetch(key, delay):
    await asyncio.sleep(delay)
    return key.upper()


async def worker(key, delay):
    value = await fetch(key, delay)
    return f"{key}={value}"


def numbers(n):
    for i in range(n):
        yield 2 * i


async def main():
    tasks = [
        asyncio.create_task(worker(key, 0.01 * i), name=f"worker-{key}")
        for i, key in enumerate(["a", "b", "c"])
    ]
    print(await asyncio.gather(*tasks))
    print("sum", sum(numbers(3)))


asyncio.run(main())
