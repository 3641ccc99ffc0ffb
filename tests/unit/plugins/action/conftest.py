"""Action plugins run in-process, as a worker runs them: a task with its args, and _execute_module answering for the
host (each test says what the modules on the host answer)."""

import sys
from pathlib import Path
from unittest import mock

import pytest

# The plan tests' facts of real releases (tests/unit/plugins/plugin_utils/plan_facts.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugin_utils"))


class Host(object):
    """What the modules on the host answer, and every module run asked of it."""

    def __init__(self, answers=None):
        self.answers = dict(answers or {})
        self.runs = []

    def __call__(self, module_name=None, module_args=None, task_vars=None, **_kw):
        self.runs.append((module_name, dict(module_args or {})))
        answer = self.answers.get(module_name, {})
        return answer(module_args) if callable(answer) else dict(answer)


@pytest.fixture
def run_action():
    """run_action(ActionModule, args, host=Host(), task_vars=None, check_mode=False) -> the action's result."""
    def run(action_class, args, host=None, task_vars=None, check_mode=False):
        task = mock.MagicMock()
        task.args = dict(args)
        task.async_val = 0
        task.check_mode = check_mode
        task.diff = False
        task.action = "gpufleet.sglang.test"
        connection = mock.MagicMock()
        connection._shell.tmpdir = None
        action = action_class(task, connection, mock.MagicMock(), loader=mock.MagicMock(), templar=mock.MagicMock(),
                              shared_loader_obj=mock.MagicMock())
        action._execute_module = host if host is not None else Host()
        action._remove_tmp_path = mock.MagicMock()
        return action.run(task_vars=dict({"inventory_hostname": "gpu-1", "ansible_host": "10.0.0.5"},
                                         **(task_vars or {})))
    return run
