"""benchmarks/data/math_dev.jsonl is what its generator writes: a label changes in the generator, with its
reason, and the file is regenerated (issue 27 §2), never edited beside the code it scores."""

import importlib.util
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


def test_the_math_dev_set_is_its_generators_output():
    spec = importlib.util.spec_from_file_location("build_math_dev", DATA / "build_math_dev.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    committed = [json.loads(line) for line in (DATA / "math_dev.jsonl").read_text().splitlines()]
    assert committed == generator.rows(), "math_dev.jsonl is stale: run python benchmarks/data/build_math_dev.py"
