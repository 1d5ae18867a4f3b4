"""Every sandbox language end to end through a real server (bwrap): correct programs score 1, subtly
wrong ones exactly their share, compile errors are `ok` with reward 0 and the compiler's message, the
same through SandboxFusion's /run_code; sandboxed Python imports the packaged libraries; and each
language's attacks (fork bomb, memory bomb, network, writing outside scratch, reading the expected
output) are contained while /healthz keeps answering."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
import httpx
import pytest

from _language_programs import BROKEN, CORRECT, TESTS, WRONG, WRONG_REWARD, response
from test_code_containment import HealthWatch
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings
from olmorl.rewards.code import extract_program, stdout_matches
from olmorl.sandbox import LANGUAGES
from olmorl.sandbox._languages import host_languages

AVAILABLE = host_languages()
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap missing: run scripts/install-system-deps.sh")


def needs(language: str):
    return pytest.param(language, marks=pytest.mark.skipif(
        bool(AVAILABLE[language]), reason=f"{AVAILABLE[language]} (scripts/install-system-deps.sh)"))


ALL = [needs(name) for name in LANGUAGES]
COMPILED = [needs(name) for name in BROKEN]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "server.log"
    srv = LocalRewardServer(log_path=str(log), workers=1,
                            sandbox=SandboxSettings(parallelism=2, test_timeout_s=3.0)).start()
    yield srv.url
    srv.stop()


def verify(url: str, items: list[dict]) -> list[dict]:
    r = httpx.post(url + "/v1/verify", json={"items": items}, timeout=300)
    assert r.status_code == 200, r.text
    return r.json()["results"]


def item(language: str, program: str, tests=TESTS, verifier: str = "code_stdio", **options) -> dict:
    return {"verifier": verifier, "response": response(language, program), "ground_truth": tests,
            "options": {"language": language, **options}}


# -- pure parts --------------------------------------------------------------------------------------------
def test_extract_program_picks_the_block_in_the_language():
    text = "```python\nprint(1)\n```\n```cpp\nint main(){}\n```\n```text\nx\n```"
    assert extract_program(text, "cpp") == "int main(){}\n"
    assert extract_program(text, "c++") == "int main(){}\n"
    assert extract_program(text) == "print(1)\n"
    assert extract_program("no fence", "go") == "no fence"


def test_output_comparison_modes():
    assert stdout_matches("1 2\n", "1 2", compare="whitespace")
    assert not stdout_matches("1  2\n", "1 2\n", compare="whitespace")
    assert stdout_matches("1  2\n3\n", "1 2 3", compare="tokens")
    assert not stdout_matches("1 2 4", "1 2 3", compare="tokens")
    assert stdout_matches("1 2\n", "1 2\n", compare="exact")
    assert not stdout_matches("1 2\n", "1 2", compare="exact")
    assert stdout_matches("0.50001 2\n", "0.5  2", tol=1e-3, compare="tokens")


def test_java_source_is_named_after_its_public_class():
    java = LANGUAGES["java"]
    assert java.commands("public class Solution { }")[1][-1] == "Solution"
    assert java.source_file("final class X {}") == "Main.java"
    two = "class Helper { int f() { return 1; } }\nclass Solution {\n  public static void main(String[] a) {} }"
    assert java.commands(two)[1][-1] == "Solution" and java.source_file(two) == "Main.java"


# -- every language through /v1/verify ---------------------------------------------------------------------
@pytest.mark.parametrize("language", ALL)
def test_correct_and_wrong_programs_score_right(url, language):
    right, wrong = verify(url, [item(language, CORRECT[language]), item(language, WRONG[language])])
    assert right["status"] == "ok" and right["reward"] == 1.0, right
    assert right["details"]["language"] == language
    assert wrong["status"] == "ok" and wrong["reward"] == pytest.approx(WRONG_REWARD), wrong
    assert [t["status"] for t in wrong["details"]["tests"]] == ["passed"] * 3 + ["failed"] * 2


@pytest.mark.parametrize("language", COMPILED)
def test_compile_error_is_ok_with_reward_zero(url, language):
    [result] = verify(url, [item(language, BROKEN[language])])
    assert result["status"] == "ok" and result["reward"] == 0.0, result
    assert result["details"]["compile_error"].strip()
    assert result["details"]["counts"] == {"not_run": len(TESTS)}


def test_runtime_error_and_timeout_are_per_test(url):
    if AVAILABLE["c"]:
        pytest.skip(AVAILABLE["c"])
    crash = "#include <stdlib.h>\nint main(void) { abort(); }\n"
    spin = "int main(void) { for (;;) {} }\n"
    bad_exit = "int main(void) { return 3; }\n"
    results = verify(url, [item("c", p, TESTS[:1], timeout_s=0.5) for p in (crash, spin, bad_exit)])
    assert [r["details"]["tests"][0]["status"] for r in results] == ["error", "timeout", "error"]
    assert "signal 6" in results[0]["details"]["tests"][0]["message"]
    assert all(r["status"] == "ok" and r["reward"] == 0.0 for r in results)


def test_language_errors_are_not_silent_zeros(url):
    unknown, asserts = verify(url, [
        item("cobol", "DISPLAY 'HI'."),
        {"verifier": "code", "response": "int main(){}", "ground_truth": ["assert f(1) == 1"],
         "options": {"language": "cpp"}},
    ])
    assert unknown["status"] == "invalid" and "cobol" in unknown["error"]
    assert asserts["status"] == "invalid"


def test_code_verifier_accepts_stdio_tests_in_other_languages(url):
    if AVAILABLE["cpp"]:
        pytest.skip(AVAILABLE["cpp"])
    [result] = verify(url, [item("cpp", CORRECT["cpp"], verifier="code")])
    assert result["reward"] == 1.0, result


def test_sandboxed_python_imports_the_packaged_libraries(url):
    program = ("import numpy as np\nimport sympy\nimport pytest\nfrom sortedcontainers import SortedList\n"
               "n = int(input())\nxs = SortedList(map(int, input().split()))\n"
               "assert int(np.array(xs, dtype=object).sum()) == sum(xs)\n"
               "print(sympy.Integer(sum(xs)))\n")
    [result] = verify(url, [item("python", program)])
    assert result["reward"] == 1.0, result
    heavy = "import numpy as np\nn = int(input())\nprint(int(np.linalg.matrix_rank(np.eye(300))) * 0 + " \
            "sum(map(int, input().split())))\n"
    [result] = verify(url, [item("python", heavy, memory_mb=256)])
    assert result["reward"] == 1.0, result


# -- SandboxFusion's /run_code -------------------------------------------------------------------------------
RUN_CODE_NAMES = {"python": "python", "c": "c", "cpp": "cpp", "java": "java", "javascript": "nodejs", "go": "go",
                  "rust": "rust", "bash": "bash"}


@pytest.mark.parametrize("language", ALL)
def test_run_code_runs_every_language(url, language):
    stdin, expected = TESTS[3]["input"], TESTS[3]["output"]
    body = {"code": CORRECT[language], "language": RUN_CODE_NAMES[language], "stdin": stdin}
    got = httpx.post(url + "/run_code", json=body, timeout=120).json()
    assert got["status"] == "Success", got
    assert got["run_result"]["stdout"] == expected and got["run_result"]["return_code"] == 0
    assert (got["compile_result"] is not None) == bool(LANGUAGES[language].compile)
    wrong = httpx.post(url + "/run_code", json=dict(body, code=WRONG[language]), timeout=120).json()
    assert wrong["status"] == "Success" and wrong["run_result"]["stdout"] != expected, wrong


@pytest.mark.parametrize("language", COMPILED)
def test_run_code_reports_compile_errors(url, language):
    got = httpx.post(url + "/run_code", json={"code": BROKEN[language], "language": language}, timeout=120).json()
    assert got["status"] == "Failed" and got["run_result"] is None, got
    assert got["compile_result"]["return_code"] != 0 and got["compile_result"]["stderr"]


def test_run_code_unknown_language_is_a_sandbox_error(url):
    got = httpx.post(url + "/run_code", json={"code": "x", "language": "brainfuck"}, timeout=30).json()
    assert got["status"] == "SandboxError" and "brainfuck" in got["message"]


# -- containment, per language -------------------------------------------------------------------------------
# Each attack prints "ESCAPED" only if it got out; a contained attack fails, crashes or times out. The
# expected output of the one test is "SECRET-42-EXPECTED" (the attacks build it at run time, so their own
# source never holds it): a program that prints it has found the answer somewhere.
ATTACKS = {
    "c": {
        "fork_bomb": "#include <unistd.h>\nint main(void){ for(;;) fork(); }\n",
        "memory_bomb": "#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\nint main(void){ for(;;){ char *p ="
                       " malloc(1<<26); if(!p) return 1; memset(p, 1, 1<<26);} }\n",
        "network": "#include <stdio.h>\n#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\n"
                   "int main(void){ int s = socket(AF_INET, SOCK_STREAM, 0); if (s < 0) return 1;\n"
                   " struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(80);\n"
                   " inet_pton(AF_INET, \"1.1.1.1\", &a.sin_addr);\n"
                   " if (connect(s, (void*)&a, sizeof a) == 0) puts(\"ESCAPED\"); return 1; }\n",
        "write_outside": "#include <stdio.h>\nint main(void){ const char *p[] = {\"/usr/escaped\", \"/etc/escaped\","
                         " \"/escaped\", \"/sandbox/escaped\"};\n for (int i = 0; i < 4; i++) { FILE *f = fopen(p[i], "
                         "\"w\"); if (f) { puts(\"ESCAPED\"); fclose(f); } } return 1; }\n",
        "read_expected": "#include <stdio.h>\n#include <string.h>\nint main(void){ char b[1<<16], want[32];\n"
                         " sprintf(want, \"SECRET-%d-EXPECTED\", 6 * 7);\n"
                         " const char *p[] = {\"/proc/1/cmdline\", \"/proc/1/environ\", \"/sandbox/harness.py\","
                         " \"/proc/self/environ\"};\n"
                         " for (int i = 0; i < 4; i++) { FILE *f = fopen(p[i], \"r\"); if (!f) continue; size_t n = "
                         "fread(b, 1, sizeof b - 1, f); b[n] = 0; fclose(f);\n"
                         "  for (size_t j = 0; j + strlen(want) <= n; j++) if (!memcmp(b + j, want, strlen(want))) "
                         "{ puts(want); return 0; } } return 0; }\n",
    },
    "java": {
        "fork_bomb": "public class Main { public static void main(String[] a) throws Exception { while (true) new Thread(()"
                     " -> { try { Thread.sleep(100000); } catch (Exception e) {} }).start(); } }\n",
        "memory_bomb": "import java.util.*;\npublic class Main { public static void main(String[] a) { List<long[]> l = new "
                       "ArrayList<>(); while (true) l.add(new long[1 << 24]); } }\n",
        "network": "public class Main { public static void main(String[] a) throws Exception { new java.net.Socket("
                   "\"1.1.1.1\", 80); System.out.println(\"ESCAPED\"); } }\n",
        "write_outside": "public class Main { public static void main(String[] a) throws Exception { "
                         "new java.io.FileWriter(\"/usr/escaped\").close(); System.out.println(\"ESCAPED\"); } }\n",
    },
    "javascript": {
        "fork_bomb": "const cp = require('child_process');\nfor (;;) { try { cp.spawn('node', ['-e', 'setInterval(()=>{},1e6)']);"
                     " } catch (e) {} }\n",
        "memory_bomb": "const a = []; for (;;) a.push(Buffer.alloc(1 << 26, 1));\n",
        "network": "require('net').connect(80, '1.1.1.1', () => { console.log('ESCAPED'); process.exit(0); })"
                   ".on('error', () => process.exit(1));\n",
        "write_outside": "try { require('fs').writeFileSync('/usr/escaped', 'x'); console.log('ESCAPED'); } catch (e) {}\n",
    },
    "go": {
        "fork_bomb": "package main\n\nimport \"os/exec\"\n\nfunc main() {\n\tfor {\n\t\texec.Command(\"/proc/self/exe\").Start()\n\t}\n}\n",
        "memory_bomb": "package main\n\nfunc main() {\n\tvar keep [][]byte\n\tfor {\n\t\tb := make([]byte, 1<<26)\n\t\t"
                       "for i := range b {\n\t\t\tb[i] = 1\n\t\t}\n\t\tkeep = append(keep, b)\n\t}\n}\n",
        "network": "package main\n\nimport (\n\t\"fmt\"\n\t\"net\"\n)\n\nfunc main() {\n\tif _, err := net.Dial(\"tcp\", "
                   "\"1.1.1.1:80\"); err == nil {\n\t\tfmt.Println(\"ESCAPED\")\n\t}\n}\n",
    },
    "rust": {
        "memory_bomb": "fn main() { let mut v: Vec<Vec<u8>> = Vec::new(); loop { v.push(vec![1u8; 1 << 26]); } }\n",
        "network": "fn main() { if std::net::TcpStream::connect(\"1.1.1.1:80\").is_ok() { println!(\"ESCAPED\"); } }\n",
    },
    "bash": {
        "fork_bomb": "f() { f | f & }; f\n",
        "network": "exec 3<>/dev/tcp/1.1.1.1/80 && echo ESCAPED\n",
        "write_outside": "for p in /usr/escaped /etc/escaped /escaped; do echo x > $p 2>/dev/null && echo ESCAPED; done\n",
        "read_expected": "want=SECRET-$((6 * 7))-EXPECTED\nfor f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ /sandbox/* /tmp/*; do\n"
                         "  [ \"$f\" = /tmp/main.sh ] && continue\n"
                         "  { data=$(tr '\\0' '\\n' < \"$f\"); } 2>/dev/null\n"
                         "  [[ $data == *\"$want\"* ]] && { echo \"$want\"; exit 0; }\n"
                         "done\n",
    },
}
ATTACK_CASES = [pytest.param(lang, name, marks=pytest.mark.skipif(bool(AVAILABLE[lang]), reason=AVAILABLE[lang]),
                             id=f"{lang}-{name}") for lang, attacks in ATTACKS.items() for name in attacks]
CANARY = [{"input": "", "output": "SECRET-42-EXPECTED\n"}]


@pytest.mark.parametrize("language,attack", ATTACK_CASES)
def test_attack_is_contained(url, language, attack):
    with HealthWatch(url) as health:
        [result] = verify(url, [item(language, ATTACKS[language][attack], CANARY, timeout_s=2.0)])
    assert result["status"] == "ok" and "compile_error" not in result["details"], result  # the attack ran
    assert result["reward"] == 0.0, result
    assert "ESCAPED" not in str(result)
    assert not health.failures and health.count > 0, health.failures
    assert not any(os.path.exists(p) for p in ("/usr/escaped", "/etc/escaped", "/escaped")), "wrote on the host"
    honest = verify(url, [item(language, CORRECT[language], TESTS[:1])])[0]
    assert honest["reward"] == 1.0, honest  # the slot came back clean


def test_compile_bombs_are_compile_errors(url):
    if AVAILABLE["c"] or AVAILABLE["cpp"]:
        pytest.skip("needs gcc and g++")
    endless_include = '#include "/dev/zero"\nint main(void) { return 0; }\n'
    deep_templates = ("template<int N> struct F { enum { v = F<N-1>::v + F<N-2>::v }; };\n"
                      "template<> struct F<0> { enum { v = 0 }; };\ntemplate<> struct F<1> { enum { v = 1 }; };\n"
                      "int main() { return F<100000>::v; }\n")
    with HealthWatch(url) as health:
        results = verify(url, [item("c", endless_include, CANARY), item("cpp", deep_templates, CANARY)])
    for result in results:
        assert result["status"] == "ok" and result["reward"] == 0.0 and result["details"]["compile_error"], result
    assert not health.failures


def test_readyz_lists_the_languages(url):
    state = httpx.get(url + "/readyz", timeout=10).json()["verifiers"]["code"]
    assert state["languages"] == sorted(name for name, missing in AVAILABLE.items() if not missing)


def test_site_dirs_add_packages_read_only(reward_server):
    site = tempfile.mkdtemp(prefix="olmorl-site-")  # world-readable: the slot's uid reads it
    try:
        os.chmod(site, 0o755)
        Path(site, "olmorl_extra_pkg.py").write_text("def triple(x):\n    return 3 * x\n")
        os.chmod(Path(site, "olmorl_extra_pkg.py"), 0o644)
        url = reward_server(workers=1, sandbox=SandboxSettings(parallelism=1, site_dirs=[site]))
        program = ("import olmorl_extra_pkg, os\nn = int(input())\n"
                   "try:\n    open(os.path.join(os.path.dirname(olmorl_extra_pkg.__file__), 'w'), 'w')\n"
                   "    print('writable')\nexcept OSError:\n"
                   "    print(olmorl_extra_pkg.triple(n))\n")
        [result] = verify(url, [item("python", program, [{"input": "14\n", "output": "42\n"}])])
        assert result["reward"] == 1.0, result
    finally:
        shutil.rmtree(site)


def test_native_programs_may_recurse_deeply(url):
    """Judges give native code a stack as large as the memory limit: a 2-million-deep recursion
    (about 200 MB of stack) passes, as it would on Codeforces."""
    if AVAILABLE["cpp"]:
        pytest.skip(AVAILABLE["cpp"])
    deep = ("#include <cstdio>\nint d(int n) { volatile char pad[64]; pad[0] = n; return n == 0 ? 0 : 1 + d(n - 1) "
            "+ pad[0] * 0; }\nint main() { int n; if (scanf(\"%d\", &n) != 1) return 1; printf(\"%d\\n\", d(n)); }\n")
    [result] = verify(url, [item("cpp", deep, [{"input": "2000000\n", "output": "2000000\n"}], timeout_s=5.0)])
    assert result["reward"] == 1.0, result


def test_a_missing_toolchain_in_the_lean_image_names_the_full_variant(monkeypatch):
    """Nothing can be installed into a running container: in the lean image (its Dockerfile sets
    OLMORL_IMAGE_VARIANT=lean) the reason names the `full` image, not the host install script."""
    import olmorl.sandbox._languages as languages

    monkeypatch.setattr(languages, "_under_usr", lambda tool: False)
    monkeypatch.setenv("OLMORL_IMAGE_VARIANT", "lean")
    in_image = host_languages()
    assert in_image["python"] == ""
    assert "olmorl-rewards:full" in in_image["java"] and "install-system-deps" not in in_image["java"]
    monkeypatch.delenv("OLMORL_IMAGE_VARIANT")
    assert "scripts/install-system-deps.sh installs it" in host_languages()["java"]  # on a host
