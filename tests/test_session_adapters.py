"""Session adapters against a live server: NeMo Gym's resources-server contract (driven the way Gym's
simple_agent drives it), TRL's GRPOTrainer environment_factory (the real trainer), verl's BaseTool
(the real verl tool loop, where verl imports)."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import httpx
import pytest
from _verl_site import verl_here_or_rerun

from olmorl.rewards._settings import SessionSettings

ROW = {"responses_create_params": {"input": [{"role": "user", "content": "What is 6 * 7? Use python."}]},
       "env": "python", "task": {"verifier": "math", "ground_truth": "42"}}


def responses_object(text: str) -> dict:
    """An OpenAI Responses API object as Gym's agents post it to /verify (function call, its output, answer)."""
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "m", "status": "completed",
            "output": [
                {"type": "function_call", "call_id": "c1", "name": "python", "arguments": '{"code": "6 * 7"}'},
                {"type": "function_call_output", "call_id": "c1", "output": '{"output": "42\\n"}'},
                {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": text, "annotations": []}]}]}


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    from olmorl.rewards.service._local import LocalRewardServer

    tmp = tmp_path_factory.mktemp("adapters")
    server = LocalRewardServer(workers=1, log_path=str(tmp / "server.log"),
                               sessions=SessionSettings(state_dir=str(tmp / "state"))).start()
    yield server.url
    server.stop()


def test_nemo_gym_resources_server_contract(url):
    # Gym's agent keeps the cookies /seed_session set and sends them with every tool call and /verify.
    with httpx.Client(base_url=url) as agent:
        seeded = agent.post("/seed_session", json=ROW)
        assert seeded.status_code == 200 and "olmorl_session" in agent.cookies
        assert agent.post("/python", json={"code": "x = 6 * 7"}).json()["status"] == "ok"
        printed = agent.post("/python", json={"code": "print(x)"})  # the tool's reply text goes to the model
        assert printed.json()["output"] == "42\n"
        assert agent.post("/python", json={"cmd": "x"}).json()["status"] == "invalid"
        verified = agent.post("/verify", json={**ROW, "response": responses_object("It is \\boxed{42}.")}).json()
        assert verified["reward"] == 1.0 and verified["reward_components"] == {"answer": 1.0}
        assert verified["env"] == "python" and verified["response"]["id"] == "resp_1"  # the body is echoed
        assert "mask_sample" not in verified
        again = agent.post("/verify", json={**ROW, "response": responses_object("42")}).json()
        assert again["mask_sample"] is True and again["failure_kind"] == "olmorl:session_lost"
        assert "closed (verified)" in again["failure_reason"]
    with httpx.Client(base_url=url) as stranger:  # no seed: every route says what is missing
        assert stranger.post("/python", json={"code": "1"}).status_code == 404
        assert stranger.post("/verify", json={**ROW, "response": responses_object("42")}).json()["mask_sample"]
        assert "`env` field" in stranger.post("/seed_session", json={"task": {}}).json()["detail"]
        assert stranger.post("/close_session").json()["closed"] is True
    with httpx.Client(base_url=url) as agent:
        agent.post("/seed_session", json=ROW)
        assert agent.post("/close_session").status_code == 200
        assert agent.post("/python", json={"code": "1"}).status_code == 404


def test_nemo_gym_v07_environment_server_bodies(url):
    """Gym v0.7's Environment Server seeds, verifies and closes with typed bodies (episode and task identity, the
    row in `task_data`, the Responses activation in `verification_input`); the answers carry no extra fields."""
    episode = {"rollout_id": "7-0", "attempt": 1}
    task_id = {"taskset": "olmorl:python", "task_id": "7"}
    activation = {"responses_create_params": ROW["responses_create_params"],
                  "response": responses_object("It is \\boxed{42}.")}
    with httpx.Client(base_url=url) as env_server:
        seeded = env_server.post("/seed_session", json={"episode_id": episode, "task_id": task_id, "task_data": ROW})
        assert seeded.status_code == 200 and set(seeded.json()) == {"resources_session_id"}
        session_id = seeded.json()["resources_session_id"]
        assert env_server.post("/python", json={"code": "x = 6 * 7\nprint(x)"}).json()["output"] == "42\n"
        other = env_server.post("/verify", json={"episode_id": {"rollout_id": "8-0"}, "task_id": task_id,
                                                 "verification_input": activation})
        assert other.status_code == 409 and "'7-0' attempt 1" in other.json()["detail"]
        verified = env_server.post("/verify", json={"episode_id": episode, "task_id": task_id,
                                                    "verification_input": activation}).json()
        assert verified["reward"] == 1.0 and verified["reward_components"] == {"answer": 1.0}
        assert verified["response"]["id"] == "resp_1" and "responses_create_params" in verified
        assert "episode_id" not in verified and "mask_sample" not in verified
        closed = env_server.post("/close_session", json={"resources_session_id": session_id, "episode_id": episode})
        assert closed.json() == {"resources_session_id": session_id}  # idempotent: verify had closed it
    with httpx.Client(base_url=url) as env_server:  # closed before verify: the verify is masked, not a 0
        session_id = env_server.post("/seed_session", json={"episode_id": episode, "task_id": task_id,
                                                            "task_data": ROW}).json()["resources_session_id"]
        assert env_server.post("/close_session", json={"resources_session_id": session_id, "episode_id": {
            "rollout_id": "9-0"}}).status_code == 409  # not this session's episode: nothing closed
        assert env_server.post("/close_session", json={"resources_session_id": session_id}).json() == {
            "resources_session_id": session_id}  # the session id alone, as some Gym revisions send it
        lost = env_server.post("/verify", json={"episode_id": episode, "task_id": task_id,
                                                "verification_input": activation}).json()
        assert lost["mask_sample"] is True and "closed (deleted)" in lost["failure_reason"]
        bad = env_server.post("/seed_session", json={"episode_id": {"attempt": 0}, "task_id": task_id,
                                                     "task_data": ROW})
        assert bad.status_code == 422 and "episode_id.rollout_id" in bad.json()["detail"]
        no_env = env_server.post("/seed_session", json={"episode_id": episode, "task_id": task_id, "task_data": {}})
        assert no_env.status_code == 422 and "(task_data) needs an `env`" in no_env.json()["detail"]


def test_trl_grpo_trainer_runs_olmorl_session_environments(url, tmp_path):
    import trl
    from datasets import Dataset
    from transformers import AutoTokenizer
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer

    from olmorl.clients.trl_env import session_environment, session_reward
    from test_trl_grpo import tiny_model

    PythonEnv = session_environment("python", base_url=url)
    server_schema = httpx.get(f"{url}/v1/envs").json()[0]["tools"][0]["function"]
    rendered = get_json_schema(PythonEnv.python)["function"]  # what transformers puts in the chat template
    assert rendered["name"] == "python" and rendered["parameters"]["required"] == ["code"]
    assert rendered["parameters"]["properties"]["code"]["type"] == "string"
    assert server_schema["parameters"]["required"] == ["code"]

    probe = PythonEnv()
    assert probe.reset(task={"ground_truth": "42"}, prompt="p") is None
    assert probe.python(code="y = 40 + 2") == "" and probe.python(code="print(y)") == "42\n"
    assert session_reward(["\\boxed{42}"], environments=[probe]) == [1.0]

    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "6*7="}], "task": {"ground_truth": "42"}}] * 4)
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=8, max_steps=1, report_to=[], logging_steps=1, use_cpu=True,
                      save_strategy="no")
    model = tiny_model(tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()  # tool calls
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[session_reward], args=args,
                          train_dataset=rows, environment_factory=PythonEnv)
    assert [tool.__name__ for tool in trainer.tools] == ["python"]
    before = _sessions_created(url)
    trainer.train()
    assert _sessions_created(url) - before >= 4  # one session per rollout, opened by reset
    assert trainer.state.log_history[0]["rewards/session_reward/mean"] == 0.0  # random tiny model: wrong answers


def _sessions_created(url: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith('olmorl_sessions_created_total{env="python"}'))


def test_verl_tool_agent_loop_keeps_one_session_per_trajectory(url, tmp_path):
    if not verl_here_or_rerun(__file__, "test_verl_tool_agent_loop_keeps_one_session_per_trajectory"):
        return
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
    from verl.experimental.agent_loop.tool_parser import FunctionCall
    from verl.tools.tool_registry import initialize_tools_from_config

    config = tmp_path / "tools.yaml"
    config.write_text("tools:\n  - class_name: olmorl.clients.verl_tool.OlmorlSessionTool\n"
                      f"    config: {{type: native, env: python, base_url: '{url}'}}\n")
    [tool] = initialize_tools_from_config(str(config))  # verl's own loader; the schema comes from the server
    assert tool.name == "python" and tool.tool_schema.function.parameters.required == ["code"]

    loop = object.__new__(ToolAgentLoop)  # verl's real _call_tool, with the attributes it reads
    loop.tools, loop.max_tool_response_length, loop.tool_response_truncate_side = {"python": tool}, 1000, "right"
    tools_kwargs = {"python": {"create_kwargs": {"task": {"verifier": "math", "ground_truth": "42"}}}}

    async def trajectory(request_id: str) -> list[str]:
        data = AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                         metrics={}, request_id=request_id, tools_kwargs=tools_kwargs)
        outputs = []
        for code in ("x = 6 * 7", "print(x)"):
            call = FunctionCall(name="python", arguments=f'{{"code": "{code}"}}')
            response, reward, metrics = await loop._call_tool(call, tools_kwargs, data)
            outputs.append(response.text)
        instance, _ = await tool.create(create_kwargs=tools_kwargs["python"]["create_kwargs"])
        outputs.append(str(await tool.calc_reward(instance, agent_data=data, response="\\boxed{42}")))
        return outputs

    async def both() -> list[list[str]]:
        return await asyncio.gather(trajectory("a"), trajectory("b"))

    assert asyncio.run(both()) == [["", "42\n", "1.0"]] * 2  # state kept per trajectory; each verified once
    assert inspect.iscoroutinefunction(tool.release)
