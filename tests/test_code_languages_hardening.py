"""The hardened sandbox's properties hold for programs in other languages (commands) too, on the bwrap
backend, through the pool: nothing a command writes (scratch, /dev/shm, its own source or binary)
survives into the next test or job; an earlier job's data is not readable; stderr output never breaks
a program (Python's EPIPE, a native program's or a compiler's SIGPIPE) and a leftover writer never
stalls the slot; stdout is bounded; a command job's records carry its id and a build record out of
place replaces the slot; requests take the slot in turn whatever their language.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time

import pytest

from olmorl.sandbox import SandboxLimits, SandboxPool
from olmorl.sandbox import TestInput as Input  # (not collected as a test class)
from olmorl.sandbox._languages import host_languages

AVAILABLE = host_languages()
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap missing: run scripts/install-system-deps.sh")


def needs(*languages: str):
    missing = [AVAILABLE[name] for name in languages if AVAILABLE[name]]
    return pytest.mark.skipif(bool(missing), reason="; ".join(missing))


def with_pool(body, *, slots: int = 1, **limits):
    async def run():
        pool = SandboxPool("bwrap", slots=slots, limits=SandboxLimits(test_timeout_s=5.0, **limits))
        await pool.start()
        try:
            return await body(pool)
        finally:
            await pool.stop()
    return asyncio.run(run())


# -- persistence and memory of earlier jobs -------------------------------------------------------------
LOOK = "for f in /tmp/planted /tmp/planted_file /dev/shm/planted /dev/shm/planted_file; do [ -e $f ] && echo $f; done"
_BASH_PLANT = f'''if [ "$(cat)" = plant ]; then
  mkdir -p /tmp/planted/inner /dev/shm/planted 2>/dev/null
  echo x > /tmp/planted_file; echo x > /dev/shm/planted_file 2>/dev/null
  chmod 000 /tmp/planted/inner /tmp/planted
  echo planted
  printf 'echo HACKED\\nexit 0\\n' > main.sh
else
  {LOOK}
  echo clean
fi
'''
_C_PLANT = r'''#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void) {
    char word[16] = "";
    if (scanf("%15s", word) == 1 && strcmp(word, "plant") == 0) {
        mkdir("/tmp/planted", 0700); mkdir("/dev/shm/planted", 0700);
        FILE *f = fopen("/tmp/planted_file", "w"); if (f) fclose(f);
        unlink("main");  /* replace its own binary: the next test must run the build again */
        f = fopen("main", "w"); if (f) { fputs("#!/bin/sh\necho HACKED\n", f); fclose(f); chmod("main", 0755); }
        puts("planted");
        return 0;
    }
    const char *paths[] = {"/tmp/planted", "/tmp/planted_file", "/dev/shm/planted", "/dev/shm/planted_file"};
    for (int i = 0; i < 4; i++) if (access(paths[i], F_OK) == 0) puts(paths[i]);
    puts("clean");
    return 0;
}
'''


@pytest.mark.parametrize("language, program", [
    pytest.param("bash", _BASH_PLANT, marks=needs("bash")),
    pytest.param("c", _C_PLANT, marks=needs("c")),
])
def test_nothing_a_command_writes_survives_into_the_next_test_or_job(language, program):
    async def body(pool):
        outputs = []
        for stdins in (["plant", "look"], ["look"]):  # the next test; the next job
            runs, failure = await pool.run(program, [Input(stdin=s) for s in stdins], language=language)
            assert failure is None, failure
            outputs.append([r.stdout.strip() for r in runs if r.index >= 0])
        return outputs

    assert with_pool(body) == [["planted", "clean"], ["clean"]]


@needs("bash")
def test_a_command_finds_nothing_of_an_earlier_job():
    """A Python job with secrets, then a bash job on the same slot that looks everywhere it can read:
    the scratch dir, /dev/shm, every process's command line and environment, its own environment."""
    # (the pattern is spelt so that neither this script nor grep's command line contains what it finds)
    thief = ("grep -rl 'SECRET[_]MARK' /tmp /dev/shm /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null; "
             "env | grep -c 'SECRET[_]MARK'; echo done")

    async def body(pool):
        sibling = "import os\n# SECRET_MARK_PROGRAM\nopen('/tmp/SECRET_MARK', 'w').write('SECRET_MARK_FILE')\n"
        runs, failure = await pool.run(sibling, [Input(stdin="SECRET_MARK_STDIN", expected_stdout="")])
        assert failure is None and runs[0].status == "passed", runs
        runs, failure = await pool.run(thief, [Input(stdin="")], language="bash")
        assert failure is None
        return runs[0].stdout

    assert with_pool(body).split() == ["0", "done"]


# -- output ----------------------------------------------------------------------------------------------
_NOISY = {
    "python": "import sys\nfor i in range(20000): print('debug', i, file=sys.stderr)\nprint(int(input()) * 2)\n",
    "c": '#include <stdio.h>\nint main(void) { int x; scanf("%d", &x);\n'
         '  for (int i = 0; i < 20000; i++) fprintf(stderr, "debug %d\\n", i);\n  printf("%d\\n", 2 * x); }\n',
    "bash": 'read x\nfor i in $(seq 20000); do echo "debug $i" >&2; done\necho $((x * 2))\n',
    # rustc writes a warning per unused variable to stderr: far over the stderr excerpt
    "rust": "use std::io::Read;\nfn main() {\n" + "".join(f"    let v{i} = {i};\n" for i in range(60))
            + "    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n"
            "    println!(\"{}\", s.trim().parse::<i64>().unwrap() * 2);\n}\n",
}


@pytest.mark.parametrize("language", [pytest.param(name, marks=needs(name)) for name in _NOISY])
def test_stderr_output_never_breaks_a_program_or_its_build(language):
    async def body(pool):
        return await pool.run(_NOISY[language], [Input(stdin="21\n", expected_stdout="42\n")], language=language)

    runs, failure = with_pool(body)
    assert failure is None
    assert [r.status for r in runs] == ["passed"] * len(runs), [(r.index, r.status, r.message) for r in runs]
    assert all(len(r.stderr) <= 2048 for r in runs)  # what comes back stays bounded


@needs("bash")
def test_a_leftover_writer_neither_stalls_the_slot_nor_floods_the_result():
    stderr_writer = "yes xxxxxxxxxxxxxxxx >&2 &\n(while :; do echo x >&2; done) &\necho 42\n"
    stdout_flood = "yes 0123456789\n"

    async def body(pool):
        started = time.monotonic()
        runs, failure = await pool.run(stderr_writer, [Input(stdin="", expected_stdout="42\n")] * 2,
                                       language="bash")
        elapsed = time.monotonic() - started
        flood, flood_failure = await pool.run(stdout_flood, [Input(stdin="", expected_stdout="0")],
                                              language="bash")
        after, after_failure = await pool.run("echo ok\n", [Input(stdin="", expected_stdout="ok\n")],
                                              language="bash")
        return runs, failure, elapsed, flood, flood_failure, after, after_failure

    runs, failure, elapsed, flood, flood_failure, after, after_failure = with_pool(body, max_output_bytes=1 << 16)
    assert failure is None and [r.status for r in runs] == ["passed", "passed"], runs
    assert elapsed < 5.0  # the tests end when the program does, not at the deadline
    assert flood_failure is None and flood[0].status == "failed" and "exceeded" in flood[0].message, flood
    assert len(flood[0].stdout) <= 2048 and flood[0].stdout_truncated
    assert after_failure is None and after[0].status == "passed"


# -- protocol and turns ------------------------------------------------------------------------------------
_BROKEN_ZYGOTE = '''
import os
os.write(1, b'{"ready": true}\\n')
while os.read(0, 65536):
    os.write(1, REPLY + b"\\n")
'''
BROKEN_BUILD_REPLIES = {
    "test_before_build": """b'{"job": 1, "i": 0, "status": "passed"}'""",
    "build_of_another_job": """b'{"job": 999, "i": -1, "status": "passed"}'""",
    "end_before_build": """b'{"job": 1, "end": true}'""",
}


@needs("c")
@pytest.mark.parametrize("name", sorted(BROKEN_BUILD_REPLIES))
def test_a_build_record_out_of_place_replaces_the_slot(name):
    from olmorl.sandbox._backends import ProcessBackend
    from olmorl.sandbox._channel import Launch

    class BrokenBackend(ProcessBackend):
        def launch(self, slot: int, uids: object, script: object = None) -> Launch:
            return Launch(argv=[sys.executable, "-c", _BROKEN_ZYGOTE.replace("REPLY", BROKEN_BUILD_REPLIES[name])])

    async def run() -> None:
        pool = SandboxPool("process", allow_insecure=True, slots=1)
        pool.backend = BrokenBackend(None, pool.limits)
        pool._slots[0].backend = pool.backend
        await pool.start()
        try:
            runs, failure = await pool.run("int main(void) { return 0; }", [Input(stdin="")], language="c")
            assert runs == [] and failure is not None and "replaced" in failure, (runs, failure)
            assert pool.restarts == 1 and not pool._slots[0].alive
        finally:
            await pool.stop()

    asyncio.run(run())


@needs("c", "bash")
def test_requests_take_turns_whatever_their_language():
    """One slot; request A queues three C jobs, then request B one bash job: B runs before A's last."""
    async def body(pool):
        done: list[str] = []

        async def job(owner: str, name: str, language: str, program: str):
            runs, failure = await pool.run(program, [Input(stdin="", expected_stdout="1\n")], owner=owner,
                                           language=language)
            assert failure is None and runs[-1].status == "passed", runs
            done.append(name)

        c = '#include <stdio.h>\nint main(void) { puts("1"); return 0; }\n'
        tasks = [asyncio.create_task(job("A", f"A{i}", "c", c)) for i in range(3)]
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(job("B", "B0", "bash", "echo 1\n")))
        await asyncio.gather(*tasks)
        return done

    order = with_pool(body)
    assert order.index("B0") < order.index("A2"), order
