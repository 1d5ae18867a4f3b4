"""One stdio problem in every sandbox language, with a correct program and a subtly wrong one each.

Problem: read N, then N integers (|a_i| <= 2^60); print their sum (it fits in 64 bits). The expected outputs come from
Python's exact integers (`expected_output`), not from any of these programs. The wrong programs carry
the bugs such programs really have: a 32-bit accumulator (C, C++, Java, Go, Rust), doubles past 2^53
(JavaScript), summing only the first three numbers (bash, Python). Each passes the small tests (at
most three numbers, small sums) and fails the large ones, so a right verifier gives each wrong program exactly the small tests' share.
"""

from __future__ import annotations

SMALL = [[1, 2, 3], [-5, 5], [7]]
LARGE = [[2**53 + 1, 2**53 + 3, 5, 6], [2**53, 1, 1, 1]]  # odd sums past 2^53: no double holds them


def expected_output(numbers: list[int]) -> str:
    return f"{sum(numbers)}\n"


def stdin_for(numbers: list[int]) -> str:
    return f"{len(numbers)}\n{' '.join(map(str, numbers))}\n"


TESTS = [{"input": stdin_for(ns), "output": expected_output(ns)} for ns in SMALL + LARGE]
WRONG_REWARD = len(SMALL) / len(SMALL + LARGE)

CORRECT = {
    "python": "n = int(input())\nprint(sum(map(int, input().split())))\n",
    "c": "#include <stdio.h>\nint main(void) {\n  int n; long long s = 0, x;\n  if (scanf(\"%d\", &n) != 1) return 1;\n"
         "  for (int i = 0; i < n; i++) { scanf(\"%lld\", &x); s += x; }\n  printf(\"%lld\\n\", s);\n  return 0;\n}\n",
    "cpp": "#include <bits/stdc++.h>\nusing namespace std;\nint main() {\n  int n; cin >> n; long long s = 0;\n"
           "  for (int i = 0; i < n; i++) { long long x; cin >> x; s += x; }\n  cout << s << endl;\n}\n",
    "java": "import java.io.*;\nimport java.util.*;\n\npublic class Main {\n  public static void main(String[] args) "
            "throws IOException {\n    BufferedReader r = new BufferedReader(new InputStreamReader(System.in));\n"
            "    int n = Integer.parseInt(r.readLine().trim());\n    StringTokenizer t = new StringTokenizer(r.readLine());\n"
            "    long s = 0;\n    for (int i = 0; i < n; i++) s += Long.parseLong(t.nextToken());\n"
            "    System.out.println(s);\n  }\n}\n",
    "javascript": "const lines = require('fs').readFileSync(0, 'utf8').split('\\n');\n"
                  "const xs = lines[1].trim().split(/\\s+/).map(BigInt);\n"
                  "console.log(xs.reduce((a, b) => a + b, 0n).toString());\n",
    "go": "package main\n\nimport (\n\t\"bufio\"\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tin := bufio.NewReader(os.Stdin)\n"
          "\tvar n int\n\tfmt.Fscan(in, &n)\n\tvar s int64\n\tfor i := 0; i < n; i++ {\n\t\tvar x int64\n"
          "\t\tfmt.Fscan(in, &x)\n\t\ts += x\n\t}\n\tfmt.Println(s)\n}\n",
    "rust": "use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s)"
            ".unwrap();\n    let mut it = s.split_whitespace();\n    let n: usize = it.next().unwrap().parse().unwrap();\n"
            "    let total: i64 = it.take(n).map(|x| x.parse::<i64>().unwrap()).sum();\n    println!(\"{}\", total);\n}\n",
    "bash": "read -r n\nread -r -a xs\ns=0\nfor x in \"${xs[@]}\"; do s=$((s + x)); done\necho \"$s\"\n",
}

WRONG = {
    "python": "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs[:3]))\n",
    "c": CORRECT["c"].replace("long long s = 0, x;", "int s = 0; long long x;").replace("%lld\\n\", s", "%d\\n\", s"),
    "cpp": CORRECT["cpp"].replace("long long s = 0;", "int s = 0;"),
    "java": CORRECT["java"].replace("long s = 0;", "int s = 0;").replace("s += Long", "s += (int) Long"),
    "javascript": "const lines = require('fs').readFileSync(0, 'utf8').split('\\n');\n"
                  "const xs = lines[1].trim().split(/\\s+/).map(Number);\nconsole.log(String(xs.reduce((a, b) => a + b, 0)));\n",
    "go": CORRECT["go"].replace("var s int64", "var s int32").replace("s += x", "s += int32(x)"),
    "rust": CORRECT["rust"].replace("let total: i64 = it.take(n).map(|x| x.parse::<i64>().unwrap()).sum();",
                                    "let total: i32 = it.take(n).map(|x| x.parse::<i64>().unwrap() as i32)"
                                    ".fold(0i32, |a, b| a.wrapping_add(b));"),
    "bash": "read -r n\nread -r -a xs\ns=0\nfor ((i = 0; i < n && i < 3; i++)); do s=$((s + xs[i])); done\necho \"$s\"\n",
}

# A program that does not compile, per compiled language.
BROKEN = {
    "c": "int main(void) { return undefined_name; }\n",
    "cpp": "int main() { std::vector<int> v; return v.size() }\n",
    "java": "public class Main { public static void main(String[] a) { int x = \"s\"; } }\n",
    "go": "package main\n\nfunc main() { x := 1 }\n",
    "rust": "fn main() { let x: i32 = \"s\"; }\n",
}

FENCE = {"python": "python", "c": "c", "cpp": "cpp", "java": "java", "javascript": "javascript", "go": "go",
         "rust": "rust", "bash": "bash"}


def response(language: str, program: str) -> str:
    """A model-style answer: prose, a decoy block in another language, then the program."""
    decoy = "```text\nnot code\n```\n" if language != "python" else ""
    return f"Here is my solution.\n{decoy}```{FENCE.get(language, language)}\n{program}```\n"
