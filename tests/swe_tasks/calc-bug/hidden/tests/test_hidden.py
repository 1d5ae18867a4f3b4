import unittest

from calc.ops import add, mul


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(40, 2), 42)

    def test_add_negative(self):
        self.assertEqual(add(-1, -1), -2)


class MulTest(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(mul(6, 7), 42)
