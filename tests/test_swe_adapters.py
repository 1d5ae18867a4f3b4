"""verl's tool agent loop and TRL's environment_factory drive `swe` sessions (a real server, the real
Docker engine), each with a scripted policy: one trajectory fixes the bug (reward 1), one deletes the
tests (reward 0)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from olmorl.rewards._settings import SessionSettings
from _verl_site import verl_here_or_rerun
from swe_support import TASKS, SweSettings, containers_back_to, docker_or_skip, task_containers

pytestmark = docker_or_skip()
TOOLS = ["bash", "read_file", "write_file", "str_replace", "run_tests", "submit"]
FIX = {"path": "calc/ops.py", "old_str": "return a - b", "new_str": "return a + b"}


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    from olmorl.rewards.service._local import LocalRewardServer

    tmp = tmp_path_factory.mktemp("swe-adapters")
    server = LocalRewardServer(workers=1, log_path=str(tmp / "server.log"),
                               sessions=SessionSettings(state_dir=str(tmp / "state"), call_timeout_s=90),
                               swe=SweSettings(task_root=str(TASKS))).start()
    yield server.url
    server.stop()


def test_trl_environment_factory_drives_a_swe_session(url, tmp_path):
    import trl
    from datasets import Dataset
    from transformers import AutoTokenizer
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer

    from olmorl.clients.trl_env import session_environment, session_reward
    from test_trl_grpo import tiny_model

    SweEnv = session_environment("swe", base_url=url, timeout=180)
    schemas = {name: get_json_schema(getattr(SweEnv, name))["function"] for name in TOOLS}  # as TRL renders them
    assert schemas["str_replace"]["parameters"]["required"] == ["path", "old_str", "new_str"]
    assert schemas["submit"]["parameters"].get("properties", {}) == {}

    fixer, deleter = SweEnv(), SweEnv()
    assert "calc.add(a, b)" in fixer.reset(task={"path": "calc-bug"}, prompt="p")
    deleter.reset(task={"path": "calc-bug"}, options={"reward": "fraction"})
    assert fixer.read_file(path="calc/ops.py", start_line=2, end_line=2) == "    return a - b\n"
    assert fixer.str_replace(**FIX) == "replaced 1 occurrence in calc/ops.py\n"
    assert "OK" in fixer.run_tests()
    assert fixer.submit().startswith("submitted")
    deleter.bash(command="rm -rf tests")
    assert session_reward(["done", "done"], environments=[fixer, deleter]) == [1.0, 0.0]

    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, max_steps=1, report_to=[], use_cpu=True, save_strategy="no")
    model = tiny_model(tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()  # tool calls
    trainer = GRPOTrainer(model=model, processing_class=tokenizer,
                          reward_funcs=[session_reward], args=args, environment_factory=SweEnv,
                          train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "fix"}],
                                                            "task": {"path": "calc-bug"}}] * 2))
    assert sorted(tool.__name__ for tool in trainer.tools) == sorted(TOOLS)


def test_verl_tool_agent_loop_drives_a_swe_session(url, tmp_path):
    if not verl_here_or_rerun(__file__, "test_verl_tool_agent_loop_drives_a_swe_session"):
        return
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
    from verl.experimental.agent_loop.tool_parser import FunctionCall
    from verl.tools.tool_registry import initialize_tools_from_config

    config = tmp_path / "tools.yaml"  # the environment once per tool: they share each trajectory's session
    config.write_text("tools:\n" + "".join(
        f"  - class_name: olmorl.clients.verl_tool.OlmorlSessionTool\n"
        f"    config: {{type: native, env: swe, tool: {name}, base_url: '{url}', timeout: 180}}\n" for name in TOOLS))
    tools = {tool.name: tool for tool in initialize_tools_from_config(str(config))}
    assert list(tools) == TOOLS
    loop = object.__new__(ToolAgentLoop)  # verl's real _call_tool, with the attributes it reads
    loop.tools, loop.max_tool_response_length, loop.tool_response_truncate_side = tools, 4000, "right"
    create = {"create_kwargs": {"task": {"path": "calc-bug"}}}
    tools_kwargs = {name: create for name in TOOLS}

    async def trajectory(request_id: str, calls: list[tuple[str, dict]]) -> tuple[list[str], float]:
        data = AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                         metrics={}, request_id=request_id, tools_kwargs=tools_kwargs)
        outputs = []
        for name, arguments in calls:
            response, _, _ = await loop._call_tool(FunctionCall(name=name, arguments=json.dumps(arguments)),
                                                   tools_kwargs, data)
            outputs.append(response.text)
        instance, _ = await tools["bash"].create(**create)
        return outputs, await tools["bash"].calc_reward(instance, agent_data=data, response="done")

    fixer = [("bash", {"command": "cd calc"}), ("bash", {"command": "pwd"}), ("str_replace", FIX),
             ("run_tests", {}), ("submit", {})]
    deleter = [("bash", {"command": "rm -rf tests && ls"})]
    before = task_containers()

    async def both() -> list[tuple[list[str], float]]:
        return await asyncio.gather(trajectory("fix", fixer), trajectory("delete", deleter))

    (fixed, fixed_reward), (deleted, deleted_reward) = asyncio.run(both())
    assert fixed[1] == "/workspace/calc\n" and "OK" in fixed[3], fixed  # one session across the tools
    assert deleted == ["calc\n"] and (fixed_reward, deleted_reward) == (1.0, 0.0)
    assert containers_back_to(before) == before  # verify ended both sessions
