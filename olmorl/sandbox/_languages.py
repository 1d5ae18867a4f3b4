"""The languages the sandbox runs, and how: one table, read by the pool (jobs), the backends (which
toolchains are there) and the language table in docs/sandbox.md.

Python runs in the program process's own interpreter (the fast path; see `_program.run_program`).
Every other language is a command (see `_command`): the slot's test process writes the source into
the scratch directory; a compiled language is built once per job by a program process of its own
(compile limits); the test process keeps the artifacts and, before each test, restores them into the
freshly wiped scratch, and a fresh program process execs the run command under the per-test limits.
So every test sees the same isolation as a Python test, and no test can leave anything for the next
one (not even a modified binary).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal

# Environment of every sandboxed process. One BLAS/OpenMP thread: numpy's import must not start a thread
# (and a buffer) per host core under the per-program process and memory limits.
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
# The environment a slot's harness starts with: the sandbox's, and the dynamic linker resolving every symbol
# at start-up, once in the zygote, rather than on first call in every program process it forks (each such
# lazy binding costs a symbol lookup and a copied page: ~10 page faults a test). The harness removes the
# variable at start (`_harness.main`), so programs and the commands they run see SANDBOX_ENV alone.
HARNESS_ENV = {**SANDBOX_ENV, "LD_BIND_NOW": "1"}
# Host paths (besides /usr) that toolchains resolve through: Debian's alternatives symlinks (java, libblas
# for numpy) and the JDK's configuration, which lives in /etc. Bound read-only where present.
HOST_ETC_PATHS = ("/etc/alternatives", "/etc/java-17-openjdk", "/etc/java-21-openjdk")


class UnknownLanguage(ValueError):
    """A language the sandbox has no entry for (the request's fault)."""


class LanguageUnavailable(RuntimeError):
    """A known language whose toolchain this sandbox lacks (the deployment's fault, not the program's)."""


@dataclass(frozen=True)
class Language:
    """How one language is compiled (optional) and run. Commands run in the scratch dir, with PATH set."""

    name: str
    source: str  # the file the program is written to
    run: tuple[str, ...]  # argv of each test
    compile: tuple[str, ...] = ()  # argv of the one build step; empty: interpreted
    artifacts: tuple[str, ...] = ()  # glob patterns (scratch top level) kept from the build for the runs
    tools: tuple[str, ...] = ()  # executables that must exist in the sandbox
    version: tuple[str, ...] = ()  # argv that prints the toolchain's version
    # The JVM, V8 and Go's runtime reserve gigabytes of address space up front, so RLIMIT_AS would stop
    # them at start: they are bounded by RLIMIT_DATA (private writable memory) and the slot's cgroup.
    memory_rlimit: Literal["as", "data"] = "as"
    stack_is_memory: bool = False  # native code: the stack may use the whole memory limit (judges' habit)
    env: dict[str, str] = field(default_factory=dict)
    fences: tuple[str, ...] = ()  # Markdown fence tags that mark a block in this language
    packages: str = ""  # Debian packages that provide the toolchain (scripts/install-system-deps.sh)

    @property
    def compiled(self) -> bool:
        return bool(self.compile)

    def source_file(self, program: str) -> str:
        """Java wants the file named after its public class; everything else uses `source`."""
        if self.name == "java":
            match = re.search(r"\bpublic\s+(?:(?:final|abstract|static)\s+)*class\s+([A-Za-z_$][\w$]*)", program)
            if match:
                return match.group(1) + ".java"
        return self.source

    def main_class(self, program: str) -> str:
        """Java: the class declared last before `static void main` (the one that holds it), else the
        file's stem."""
        stem = self.source_file(program).rsplit(".", 1)[0]
        main = re.search(r"\bstatic\s+(?:final\s+)?void\s+main\s*\(", program)
        if self.name != "java" or main is None:
            return stem
        names = re.findall(r"\bclass\s+([A-Za-z_$][\w$]*)", program[:main.start()])
        return names[-1] if names else stem

    def commands(self, program: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(compile argv, run argv) for this program, with the source file and main class filled in."""
        source, main = self.source_file(program), self.main_class(program)
        fill = lambda argv: tuple(a.replace("{source}", source).replace("{main}", main) for a in argv)  # noqa: E731
        return fill(self.compile), fill(self.run)


# "{scratch}": the sandbox's scratch dir (the harness fills it in; /tmp except in the `process` backend).
_GO_ENV = {"GOCACHE": "{scratch}/.gocache", "GOPATH": "{scratch}/.gopath", "GO111MODULE": "off", "GOFLAGS": "",
           "GOMAXPROCS": "2", "GOTOOLCHAIN": "local"}
_JVM = ("-XX:+UseSerialGC", "-XX:ActiveProcessorCount=1", "-Xshare:auto")  # few threads, fast start

LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (
    Language("python", "main.py", ("python3", "main.py"), tools=("python3",), version=("python3", "--version"),
             fences=("python", "py", "python3", "py3"), packages="python3"),
    Language("c", "main.c", ("./main",), ("gcc", "-O2", "-std=gnu11", "-pipe", "-o", "main", "{source}", "-lm"),
             ("main",), tools=("gcc",), version=("gcc", "-dumpfullversion"), stack_is_memory=True,
             fences=("c",), packages="gcc libc6-dev"),
    Language("cpp", "main.cpp", ("./main",), ("g++", "-O2", "-std=gnu++17", "-pipe", "-o", "main", "{source}"),
             ("main",), tools=("g++",), version=("g++", "-dumpfullversion"), stack_is_memory=True,
             fences=("cpp", "c++", "cc", "cxx"), packages="g++"),
    Language("java", "Main.java", ("java", *_JVM, "-cp", ".", "{main}"),
             ("javac", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:ActiveProcessorCount=2",
              "-encoding", "UTF-8", "-d", ".", "{source}"),
             ("*.class",), tools=("javac", "java"), version=("javac", "-version"), memory_rlimit="data",
             fences=("java",), packages="openjdk-17-jdk-headless"),
    Language("javascript", "main.js", ("node", "--v8-pool-size=1", "main.js"),
             tools=("node",), version=("node", "--version"), memory_rlimit="data",
             fences=("javascript", "js", "node", "nodejs"), packages="nodejs"),
    Language("go", "main.go", ("./main",), ("go", "build", "-o", "main", "{source}"), ("main",),
             tools=("go",), version=("go", "version"), memory_rlimit="data", env=_GO_ENV,
             fences=("go", "golang"), packages="golang-go"),
    Language("rust", "main.rs", ("./main",),
             ("rustc", "-O", "--edition", "2021", "-C", "strip=symbols", "-o", "main", "{source}"), ("main",),
             tools=("rustc",), version=("rustc", "--version"), stack_is_memory=True,
             fences=("rust", "rs"), packages="rustc"),
    Language("bash", "main.sh", ("bash", "main.sh"), tools=("bash",), version=("bash", "--version"),
             fences=("bash", "sh", "shell"), packages="bash"),
)}
ALIASES = {"python3": "python", "py": "python", "c++": "cpp", "cxx": "cpp", "js": "javascript",
           "node": "javascript", "nodejs": "javascript", "golang": "go", "rs": "rust", "sh": "bash"}


def language(name: str) -> Language:
    """The table entry for `name` (or one of its aliases); UnknownLanguage otherwise."""
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in LANGUAGES:
        raise UnknownLanguage(f"unknown language {name!r}; the sandbox runs {', '.join(LANGUAGES)}")
    return LANGUAGES[key]


def host_languages() -> dict[str, str]:
    """Every language with "" when this host has its tools under /usr (the only tree a bwrap sandbox
    sees; /usr/bin/java -> /etc/alternatives -> /usr/lib/jvm counts, /etc/alternatives is bound),
    else the reason it is missing."""
    found: dict[str, str] = {}
    for lang in LANGUAGES.values():
        # Python runs in the harness's own interpreter: always there.
        missing = [] if lang.name == "python" else [tool for tool in lang.tools if not _under_usr(tool)]
        found[lang.name] = f"{', '.join(missing)} not installed under /usr ({_install_hint(lang)})" if missing else ""
    return found


def _install_hint(lang: Language) -> str:
    """Where the toolchain comes from: in the lean server image (its Dockerfile sets OLMORL_IMAGE_VARIANT), the
    `full` image variant, since nothing can be installed into a running container; on a host, the install script."""
    if os.environ.get("OLMORL_IMAGE_VARIANT") == "lean":
        return ("the lean olmorl-rewards image has no toolchain but Python's: run its `full` variant, "
                "olmorl-rewards:full, which has every sandbox language (OLMORL_IMAGE_VARIANT=full "
                "scripts/build-image.sh builds it)")
    return f"Debian package {lang.packages}; scripts/install-system-deps.sh installs it"


def _under_usr(tool: str) -> bool:
    for directory in ("/usr/local/bin", "/usr/bin"):
        path = os.path.join(directory, tool)
        if os.access(path, os.X_OK):
            return os.path.realpath(path).startswith("/usr/")
    return False


def job_fields(lang: Language, program: str, *, memory_bytes: int, compile_timeout_s: float,
               compile_memory_bytes: int) -> dict[str, Any]:
    """The job fields that make the sandbox run `program` as a `lang` command (see `_tester.build_command`)."""
    compile_argv, run_argv = lang.commands(program)
    env = {**SANDBOX_ENV, **lang.env}
    fields: dict[str, Any] = {
        "program": "",
        "sources": {lang.source_file(program): program},
        "exec": list(run_argv),
        "env": env,
        "memory_rlimit": lang.memory_rlimit,
        "stack_bytes": memory_bytes if lang.stack_is_memory else None,
    }
    if lang.compiled:
        fields["build"] = {
            "exec": list(compile_argv),
            "keep": list(lang.artifacts),
            "timeout": compile_timeout_s,
            "memory_bytes": compile_memory_bytes,
            "stack_bytes": None,
        }
    return fields
