#!/bin/bash
# Harbor verifier contract: write the reward to /logs/verifier/reward.txt
python3 /tests/test_outputs.py && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
