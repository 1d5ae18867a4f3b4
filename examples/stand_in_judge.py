# A stand-in for the LLM judge, so the judge examples run anywhere: a real OpenAI-compatible server on 127.0.0.1
# that reads the prompts olmorl sends and answers from a table of opinions instead of a model. For training, point
# OLMORL_JUDGE_BASE_URL and OLMORL_JUDGE_MODEL at a real judge (vLLM, SGLang, a hosted API) instead.
import json
import re
import socket
import threading
import time
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

BLOCK = re.compile(r"<(response(?:_\w+)?|criterion)>\n(.*?)\n</\1>", re.DOTALL)  # the material's tags


def verdict(prompt: str, grades: dict[str, int], meets: dict[str, set[str]]) -> dict:
    """What the judge answers: `grades` is its 1-10 opinion of each response it knows, `meets` the rubric criteria
    each response meets. Shown responses it has no opinion of, it ranks by position, first best (position bias)."""
    blocks = dict(BLOCK.findall(prompt))
    if "criterion" in blocks:  # rubric_judge: one criterion per call
        return {"met": blocks["criterion"] in meets.get(blocks["response"], set())}
    if "response" in blocks:  # judge (and math's judge_fallback): one response, a score
        return {"score": grades[blocks["response"]]}
    shown = list(blocks.values())  # pairwise (response_A, response_B) or group (response_1 ... response_G)
    scores = [grades[text] for text in shown] if all(text in grades for text in shown) else [
        10 - position for position in range(len(shown))]
    if "response_A" in blocks:
        return {"winner": "tie" if scores[0] == scores[1] else "AB"[scores[1] > scores[0]]}
    return {"scores": scores}


@contextmanager
def stand_in_judge(grades: dict[str, int], meets: dict[str, set[str]]):
    """Serve the judge on a free port; yields its base URL (with /v1)."""
    app = FastAPI()

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": "stand-in", "object": "model", "owned_by": "example"}]}

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> dict:
        answer = {"reasoning": "Stand-in verdict.", **verdict(body["messages"][-1]["content"], grades, meets)}
        return {"id": "stand-in", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": json.dumps(answer)}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join()
