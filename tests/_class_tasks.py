"""Class-based code tasks (issue 14 §1): tests whose values are not plain data.

Each task has asserts (or a HumanEval `check`) in the style of LeetCode/AceCode/HumanEval tests, a
correct solution and a subtly wrong one (an off-by-one, a missed case, a wrong comparison). The
expected verdict of every (solution, test) pair is not written here: the tests take it from running
the program and the test natively in one plain CPython process (the semantics the sandbox must keep).
"""

LINKED_LIST = '''
class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next

def build(values):
    head = None
    for v in reversed(values):
        head = ListNode(v, head)
    return head

def to_list(node):
    out = []
    while node:
        out.append(node.val)
        node = node.next
    return out

def reverse(head):
    prev = None
    while head:
        head.next, prev, head = prev, head, head.next
    return prev
'''

TASKS = [
    {
        "name": "linked_list_reverse",
        "tests": ["assert to_list(reverse(build([1, 2, 3]))) == [3, 2, 1]",
                  "n = build([5])\nassert reverse(n).val == 5 and reverse(None) is None",
                  "head = reverse(build([1, 2]))\nassert head.next.val == 1\nassert head.next.next is None"],
        "correct": LINKED_LIST,
        "wrong": LINKED_LIST.replace("    while head:\n        head.next, prev", "    while head and head.next:\n        head.next, prev"),
    },
    {
        "name": "binary_tree",
        "tests": ["t = TreeNode(1, TreeNode(2, TreeNode(4)), TreeNode(3))\nassert max_depth(t) == 3",
                  "assert inorder(TreeNode(2, TreeNode(1), TreeNode(3))) == [1, 2, 3]",
                  "assert max_depth(None) == 0",
                  "t = invert(TreeNode(1, TreeNode(2), TreeNode(3)))\nassert t.left.val == 3 and t.right.val == 2"],
        "correct": '''
class TreeNode:
    def __init__(self, val=0, left=None, right=None):
        self.val, self.left, self.right = val, left, right

def max_depth(root):
    return 0 if root is None else 1 + max(max_depth(root.left), max_depth(root.right))

def inorder(root):
    return [] if root is None else inorder(root.left) + [root.val] + inorder(root.right)

def invert(root):
    if root:
        root.left, root.right = invert(root.right), invert(root.left)
    return root
''',
        "wrong": '''
class TreeNode:
    def __init__(self, val=0, left=None, right=None):
        self.val, self.left, self.right = val, left, right

def max_depth(root):
    return 0 if root is None else 1 + max_depth(root.left)

def inorder(root):
    return [] if root is None else [root.val] + inorder(root.left) + inorder(root.right)

def invert(root):
    return root
''',
    },
    {
        "name": "graph_paths",
        "tests": ["g = Graph()\ng.add_edge('a', 'b')\ng.add_edge('b', 'c')\nassert g.has_path('a', 'c')",
                  "g = Graph()\ng.add_edge('a', 'b')\nassert not g.has_path('b', 'a')",
                  "g = Graph()\nfor u, v in [(1, 2), (2, 3), (3, 1)]:\n    g.add_edge(u, v)\nassert sorted(g.neighbors(1)) == [2]\nassert g.has_path(3, 2)"],
        "correct": '''
from collections import defaultdict, deque

class Graph:
    def __init__(self):
        self.edges = defaultdict(set)

    def add_edge(self, u, v):
        self.edges[u].add(v)

    def neighbors(self, u):
        return list(self.edges[u])

    def has_path(self, a, b):
        seen, todo = {a}, deque([a])
        while todo:
            u = todo.popleft()
            if u == b:
                return True
            for v in self.edges[u] - seen:
                seen.add(v)
                todo.append(v)
        return False
''',
        "wrong": '''
from collections import defaultdict

class Graph:
    def __init__(self):
        self.edges = defaultdict(set)

    def add_edge(self, u, v):
        self.edges[u].add(v)
        self.edges[v].add(u)

    def neighbors(self, u):
        return list(self.edges[u])

    def has_path(self, a, b):
        return b in self.edges[a] or any(b in self.edges[v] for v in self.edges[a])
''',
    },
    {
        "name": "dataclass_ordering",
        "tests": ["assert [p.name for p in sorted([Person('b', 30), Person('a', 25), Person('c', 25)])] == ['a', 'c', 'b']",
                  "assert Person('x', 1) == Person('x', 1)\nassert Person('x', 1) != Person('y', 1)",
                  "assert oldest([Person('a', 3), Person('b', 9)]).name == 'b'",
                  "assert Person('a', 1) < Person('a', 2)"],
        "correct": '''
from dataclasses import dataclass, field

@dataclass(order=True)
class Person:
    age: int = field(init=False, repr=False)
    name: str
    years: int

    def __post_init__(self):
        self.age = self.years

def oldest(people):
    return max(people)
''',
        "wrong": '''
from dataclasses import dataclass

@dataclass(order=True)
class Person:
    name: str
    years: int

def oldest(people):
    return max(people)
''',
    },
    {
        "name": "enum_state_machine",
        "tests": ["assert step(State.IDLE, 'start') is State.RUNNING",
                  "assert step(State.RUNNING, 'stop') is State.STOPPED",
                  "s = State.IDLE\nfor e in ['start', 'pause', 'start']:\n    s = step(s, e)\nassert s is State.RUNNING",
                  "assert step(State.STOPPED, 'start') is State.STOPPED\nassert State.IDLE.value == 0"],
        "correct": '''
import enum

class State(enum.Enum):
    IDLE = 0
    RUNNING = 1
    PAUSED = 2
    STOPPED = 3

_T = {(State.IDLE, 'start'): State.RUNNING, (State.RUNNING, 'pause'): State.PAUSED,
      (State.PAUSED, 'start'): State.RUNNING, (State.RUNNING, 'stop'): State.STOPPED,
      (State.PAUSED, 'stop'): State.STOPPED}

def step(state, event):
    return _T.get((state, event), state)
''',
        "wrong": '''
import enum

class State(enum.Enum):
    IDLE = 0
    RUNNING = 1
    PAUSED = 2
    STOPPED = 3

def step(state, event):
    if event == 'start':
        return State.RUNNING
    if event == 'stop':
        return State.STOPPED
    return State.PAUSED
''',
    },
    {
        "name": "iterator_protocol",
        "tests": ["assert list(Countdown(3)) == [3, 2, 1]",
                  "it = iter(Countdown(2))\nassert next(it) == 2 and next(it) == 1\ntry:\n    next(it)\n    raise AssertionError('no StopIteration')\nexcept StopIteration:\n    pass",
                  "assert list(evens(7)) == [0, 2, 4, 6]",
                  "g = evens(3)\nassert next(g) == 0\nassert sum(g) == 2"],
        "correct": '''
class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n + 1

def evens(n):
    for i in range(0, n, 2):
        yield i
''',
        "wrong": '''
class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n < 0:
            raise StopIteration
        self.n -= 1
        return self.n + 1

def evens(n):
    for i in range(0, n + 1, 2):
        yield i
''',
    },
    {
        "name": "context_manager",
        "tests": ["r = Resource()\nwith r as handle:\n    assert handle.open\nassert not r.open",
                  "r = Resource()\ntry:\n    with r:\n        raise ValueError('x')\nexcept ValueError:\n    pass\nassert not r.open and r.errors == 1",
                  "with Suppress(KeyError):\n    raise KeyError('k')\nassert True"],
        "correct": '''
class Resource:
    def __init__(self):
        self.open = False
        self.errors = 0

    def __enter__(self):
        self.open = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self.open = False
        if exc_type is not None:
            self.errors += 1
        return False

class Suppress:
    def __init__(self, *kinds):
        self.kinds = kinds

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return exc_type is not None and issubclass(exc_type, self.kinds)
''',
        "wrong": '''
class Resource:
    def __init__(self):
        self.open = False
        self.errors = 0

    def __enter__(self):
        self.open = True
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.open = False
        return False

class Suppress:
    def __init__(self, *kinds):
        self.kinds = kinds

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return False
''',
    },
    {
        "name": "operator_overloading",
        "tests": ["assert Vector(1, 2) + Vector(3, 4) == Vector(4, 6)",
                  "v = Vector(1, 2) * 3\nassert (v.x, v.y) == (3, 6)",
                  "assert abs(Vector(3, 4)) == 5.0",
                  "assert repr(Vector(1, 2)) == 'Vector(1, 2)'\nassert Vector(1, 2) != Vector(2, 1)",
                  "assert len({Vector(1, 1), Vector(1, 1), Vector(2, 2)}) == 2"],
        "correct": '''
import math

class Vector:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)

    def __abs__(self):
        return math.hypot(self.x, self.y)

    def __eq__(self, other):
        return isinstance(other, Vector) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __repr__(self):
        return f"Vector({self.x}, {self.y})"
''',
        "wrong": '''
import math

class Vector:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.x)

    def __mul__(self, k):
        return Vector(self.x * k, self.y)

    def __abs__(self):
        return self.x + self.y

    def __eq__(self, other):
        return isinstance(other, Vector) and self.x == other.x

    def __hash__(self):
        return hash(self.x)

    def __repr__(self):
        return f"Vector({self.x},{self.y})"
''',
    },
    {
        "name": "regex_and_exceptions",
        "tests": ["assert PATTERN is not None\nassert PATTERN.fullmatch('ab12')",
                  "assert parse_id('id-42') == 42",
                  "try:\n    parse_id('nope')\n    raise AssertionError('no error')\nexcept BadId as e:\n    assert 'nope' in str(e)",
                  "assert isinstance(BadId('x'), ValueError)"],
        "correct": '''
import re

PATTERN = re.compile(r"[a-z]+[0-9]+")

class BadId(ValueError):
    pass

def parse_id(text):
    m = re.fullmatch(r"id-([0-9]+)", text)
    if not m:
        raise BadId(f"bad id {text}")
    return int(m.group(1))
''',
        "wrong": '''
import re

PATTERN = re.compile(r"[a-z]+")

class BadId(Exception):
    pass

def parse_id(text):
    m = re.search(r"([0-9]+)", text)
    if not m:
        raise ValueError(text)
    return int(m.group(1))
''',
    },
    {
        "name": "humaneval_check_with_class",
        "check": {"test": "def check(candidate):\n    for n, want in [(1, [1]), (3, [3, 2, 1]), (0, [])]:\n"
                          "        node = candidate(n)\n        got = []\n        while node is not None:\n"
                          "            got.append(node.val)\n            node = node.next\n        assert got == want\n",
                  "entry_point": "countdown_list"},
        "correct": "class Node:\n    def __init__(self, val, next=None):\n        self.val, self.next = val, next\n\n"
                   "def countdown_list(n):\n    head = None\n    for v in range(1, n + 1):\n        head = Node(v, head)\n    return head\n",
        "wrong": "class Node:\n    def __init__(self, val, next=None):\n        self.val, self.next = val, next\n\n"
                 "def countdown_list(n):\n    head = None\n    for v in range(n, 0, -1):\n        head = Node(v, head)\n    return head\n",
    },
    {
        "name": "stack_class_humaneval_style",
        "tests": ["s = MinStack()\nfor v in [5, 3, 7]:\n    s.push(v)\nassert s.min() == 3\ns.pop()\ns.pop()\nassert s.min() == 5",
                  "s = MinStack()\ns.push(2)\nassert len(s) == 1 and bool(s)\ns.pop()\nassert not s",
                  "assert all(MinStack.of(xs).min() == min(xs) for xs in [[3, 1, 2], [9], [4, 4, -1]])"],
        "correct": '''
class MinStack:
    def __init__(self):
        self.items = []

    @classmethod
    def of(cls, values):
        s = cls()
        for v in values:
            s.push(v)
        return s

    def push(self, v):
        self.items.append((v, min(v, self.items[-1][1]) if self.items else v))

    def pop(self):
        return self.items.pop()[0]

    def min(self):
        return self.items[-1][1]

    def __len__(self):
        return len(self.items)
''',
        "wrong": '''
class MinStack:
    def __init__(self):
        self.items = []

    @classmethod
    def of(cls, values):
        s = cls()
        for v in values:
            s.push(v)
        return s

    def push(self, v):
        self.items.append(v)

    def pop(self):
        return self.items.pop()

    def min(self):
        return min(self.items[:-1] or self.items)

    def __len__(self):
        return len(self.items)
''',
    },
]
