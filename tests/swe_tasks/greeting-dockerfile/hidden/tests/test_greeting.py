import unittest

from app.greeting import greeting


class GreetingTest(unittest.TestCase):
    def test_reads_the_installed_file(self):
        self.assertEqual(greeting(), "Hello from the image")
