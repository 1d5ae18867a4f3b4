# Score a C++ answer and a Go answer (a 32-bit overflow) against stdin/stdout tests, and import numpy.
from olmorl.clients import RewardClient

tests = [{"input": "2\n1 2\n", "output": "3\n"}, {"input": "2\n3000000000 3000000000\n", "output": "6000000000\n"}]
cpp = "```cpp\n#include <iostream>\nint main() { long long n, x, s = 0; std::cin >> n;\n" \
      "  while (n--) { std::cin >> x; s += x; }\n  std::cout << s << std::endl; }\n```"
go = "```go\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar n, s int32\n\tvar x int64\n\tfmt.Scan(&n)\n" \
     "\tfor ; n > 0; n-- {\n\t\tfmt.Scan(&x)\n\t\ts += int32(x)\n\t}\n\tfmt.Println(s)\n}\n```"
numpy = "```python\nimport numpy as np\ninput()\nprint(np.array(input().split(), dtype=np.int64).sum())\n```"
items = [{"verifier": "code_stdio", "response": text, "ground_truth": tests, "options": {"language": language}}
         for language, text in (("cpp", cpp), ("go", go), ("python", numpy))]
items.append({"verifier": "code_stdio", "response": "```c\nint main(void) { return x; }\n```",
              "ground_truth": tests, "options": {"language": "c"}})
with RewardClient() as client:
    for item, result in zip(items, client.verify(items)):
        error = [line for line in result.details.get("compile_error", "").splitlines() if "error" in line][:1]
        print(f"{item['options']['language']:6} {result.status} reward={result.reward}", *error)
