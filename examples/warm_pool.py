# A warm pool of slow-starting things, keyed by a spec: here plain processes (olmorl pools the python
# sessions' sandboxed interpreters this way). Taken items are the taker's to stop; they never go back.
import asyncio

from olmorl.rewards.sessions import WarmPool


async def start(command: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(*command.split(), stdin=asyncio.subprocess.PIPE)


async def stop(process: asyncio.subprocess.Process) -> None:
    process.kill()
    await process.wait()


async def main() -> None:
    pool = WarmPool(start, stop, size=2, healthy=lambda p: p.returncode is None)
    pool.fill("cat")  # two are started in the background
    while pool.stats("cat").ready < 2:
        await asyncio.sleep(0.01)
    process = await pool.take("cat")  # a ready one (a hit); the pool starts a replacement
    await stop(process)
    while pool.stats("cat").ready < 2:
        await asyncio.sleep(0.01)
    print(pool.stats("cat"))
    await pool.close()  # stops the ready ones


asyncio.run(main())
