"""A claude-code task under the docker driver through the installed CLI: the agent runs in the container, whose
confined network (the default) has no way out but the harness's proxies, and reaches the scripted API on the
host's loopback through the model proxy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import write, write_task
from .conftest import (
    ENV_PROBE,
    SystemCli,
    agent_usage,
    anthropic_environment,
    carried,
    claude_code_task,
    new_key,
    no_key_anywhere,
    probe_ran,
    replay_task_file,
    task_file,
)

pytestmark = pytest.mark.slow


def test_claude_code_in_a_container_succeeds_and_its_tools_never_see_the_key(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic, docker_image: str
) -> None:
    key = new_key()
    fake = scripted_anthropic(
        Script(
            [
                Turn(tools=[("Bash", {"command": "test -f /.dockerenv && echo inside > out.txt"})]),
                Turn(tools=[("Bash", {"command": ENV_PROBE})]),
                Turn(text="Done: created out.txt"),
            ]
        )
    )
    sandbox = {"driver": "docker", "python": None, "image": docker_image}
    success = [{"type": "file_contains", "path": "out.txt", "includes": ["inside"], "description": "in the container"}]
    task = claude_code_task(tmp_path / "tasks", "docker", sandbox=sandbox, success_criteria=success)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, key))

    assert outcome.code == 0, outcome.output
    assert len(fake.script.agent_requests()) == 3, fake.script.paths
    assert fake.script.paths and all(path.startswith("/v1/messages") for path in fake.script.paths), fake.script.paths
    assert carried(key, fake.script.headers)
    result = run.result("docker")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    tokens_in, tokens_out, cost = agent_usage(result)
    assert (tokens_in, tokens_out) == (300, 60) and cost > 0
    probe_ran(run.evaluation("docker") / "sandbox")
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


# A process in the container swaps every command output file of the container's capture folder for a link to a
# host file, or for a FIFO: the harness must neither read the host file nor wait on the FIFO.
SWAPPER = """import os, time
while True:
    for name in os.listdir("/run/coder-eval"):
        path = os.path.join("/run/coder-eval", name)
        if name.endswith(".out") and not os.path.islink(path):
            try:
                os.unlink(path)
                {plant}
            except OSError:
                pass
    time.sleep(0.01)
"""


# The criterion's command starts the swapper beside it and ends once its own output file was swapped (a loaded
# machine can start a python later than a fixed sleep allows), or after 20 s saying the swapper never came.
SWAPPED = (
    "for i in $(seq 200); do case $(readlink /proc/$$/fd/1) in *deleted*) exit 0 ;; esac; sleep 0.1; done; "
    "echo the swapper never swapped >&2"
)


@pytest.mark.parametrize(
    "plant", ["os.symlink('HOST_FILE', path)", "os.mkfifo(path)"], ids=["link-to-a-host-file", "fifo"]
)
def test_a_process_left_in_the_container_cannot_feed_a_host_file_or_a_fifo_to_a_criterion(
    tmp_path: Path, system_cli: SystemCli, docker_image: str, plant: str
) -> None:
    secret = tmp_path / "host-only.txt"
    secret.write_text("HOST-ONLY-CONTENT\n")
    secret.chmod(0o600)
    swapper = SWAPPER.format(plant=plant.replace("HOST_FILE", str(secret)))
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl/swap.py").write_text(swapper)
    task = {
        "task_id": "swap",
        "description": "a process left in the sandbox tampers with the output files",
        "agent": {"type": "none"},
        "sandbox": {
            "driver": "docker",
            "python": None,
            "image": docker_image,
            "template_sources": [{"type": "template_dir", "path": str(tmp_path / "tpl")}],
        },
        "success_criteria": [
            {
                "type": "run_command",
                "command": "python3 swap.py >/dev/null 2>&1 & echo hello; " + SWAPPED,
                "expected_stdout": "hello",
                "description": "d",
            }
        ],
    }
    outcome, run = system_cli.run(write_task(tmp_path / "tasks", task), env={}, timeout=120)
    result = run.result("swap")
    assert result["success_criteria_results"], (result["error_message"], outcome.output)
    (criterion,) = result["success_criteria_results"]
    said = (criterion, result["warnings"])  # (replaced, or caught between the unlink and the swap: not there)
    assert not criterion["passed"] and criterion["error"].startswith("its output is not known: "), said
    assert "HOST-ONLY-CONTENT" not in json.dumps(run.result("swap"))


# exits 1 when a `sleep` of the commands' user runs (the image has no pgrep; the keeper's sleep is nobody's)
LEFT_SLEEPING = (
    'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = sleep ] && [ "$(stat -c %u $p)" = "$(id -u)" ] '
    "&& exit 1; done; exit 0"
)
# a stage's python code left in /tmp, the commands' HOME, that every later `python3` would run
PLANT_USERCUSTOMIZE = (
    "site=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p \"$site\" && "
    'echo \'print("PWNED")\' > "$site/usercustomize.py" && test "$(python3 -c \'print(1)\')" != 1'
)


def test_criteria_of_a_staged_task_run_in_a_new_container_on_the_same_sandbox(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """Before scoring a task that stages its reference folder (or $TASK_DIR), what its stages left must be gone:
    a ``kill -KILL -1`` inside could be starved of its fork by a process holding every pid, and /tmp kept a
    ``usercustomize`` that ran inside the criteria's python (a red team forged a checker and read the reference
    both ways). A new container on the same sandbox folder starts clean; the reference is copied into it (once
    it was copied into the old container just before it stopped: lost, under load)."""
    write(tmp_path / "tasks/ref/expected.txt", "42\n")
    sandbox = {"driver": "docker", "python": None, "image": docker_image}
    criteria = [
        {"type": "run_command", "command": 'cat "$REFERENCE_DIR/expected.txt"', "description": "reference"},
        {  # the agent's code a criterion runs cannot change what a later one compares with (it was the user's)
            "type": "run_command",
            "command": '! echo 41 > "$REFERENCE_DIR/expected.txt" && ! touch "$REFERENCE_DIR/x" && grep -qx 42 "$REFERENCE_DIR/expected.txt"',
            "description": "read-only reference",
        },
        {"type": "run_command", "command": "test -f kept.txt && test ! -e /tmp/left", "description": "new container"},
        {"type": "run_command", "command": LEFT_SLEEPING, "description": "what the stages left is ended"},
        {"type": "run_command", "command": "test \"$(python3 -c 'print(1)')\" = 1", "description": "clean python"},
    ]
    task = task_file(
        tmp_path / "tasks",
        "fresh",
        agent={"type": "none"},
        sandbox=sandbox,
        reference={"directory": "ref"},
        pre_run=[{"command": f"touch kept.txt /tmp/left; (sleep 300 &); {PLANT_USERCUSTOMIZE}"}],
        success_criteria=criteria,
    )
    outcome, run = system_cli.run(task, env={})
    result = run.result("fresh")
    assert outcome.code == 0, [(c["description"], c["score"], c["details"]) for c in result["success_criteria_results"]]


def test_an_image_with_its_own_entrypoint_and_a_petabyte_of_output_still_run(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """The container's keeper is pinned as the entrypoint: an image's own ENTRYPOINT took `sleep infinity` as its
    arguments and exited, and the first command failed as the engine's error. A command's sparse 4 TiB of output (a
    petabyte on tmpfs) is read at its head and tail: it was read through, and held the run past SIGTERM."""
    import io

    import docker

    image = f"{docker_image}-entrypoint-test"
    dockerfile = f'FROM {docker_image}\nENTRYPOINT ["python3", "-c", "import sys; print(sys.argv)"]\n'
    docker.from_env(timeout=60).images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=image, rm=True)
    huge = "python3 -c \"import os; os.write(1, b'start\\n'); os.ftruncate(1, 2**42)\""
    task = {
        "task_id": "entry",
        "description": "an image's entrypoint, a sparse output",
        "agent": {"type": "none"},
        "sandbox": {"driver": "docker", "python": None, "image": image, "network": "none"},
        "pre_run": [{"command": huge, "timeout": 20}],
        "success_criteria": [
            {"type": "run_command", "command": "echo hi", "expected_stdout": "hi", "description": "d"}
        ],
    }
    outcome, run = system_cli.run(write_task(tmp_path / "tasks", task), env={}, timeout=120)
    result = run.result("entry")
    assert result["final_status"] == "SUCCESS", (result["error_message"], outcome.output)
    (pre_run,) = result["pre_run_results"]
    assert pre_run["stdout"].startswith("start\n") and "bytes omitted: output capped at" in pre_run["stdout"]


def test_files_a_replay_writes_are_its_own_bashs_to_change(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """The replay's Write runs on the host (as root on CI): under docker the file and the folders it made were
    root's, and the replay's own later Bash could not change them (Permission denied), where the recorded session,
    one user, could."""
    calls = [
        {"tool": "Write", "path": "src dir/app.py", "content": "print('v1')\n"},
        {"tool": "Bash", "command": "echo \"print('v2')\" >> 'src dir/app.py' && touch 'src dir/extra.py'"},
    ]
    check = {"type": "command_executed", "tool_name": "Bash", "command_pattern": "touch", "require_success": True}
    task = replay_task_file(
        tmp_path / "tasks",
        "owned",
        [{"calls": calls, "text": "done"}],
        sandbox={"driver": "docker", "python": None, "image": docker_image},
        success_criteria=[
            check | {"description": "the Bash call succeeded"},
            {"type": "run_command", "command": "test -f 'src dir/extra.py'", "description": "seen in the container"},
        ],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    kept = (run.evaluation("owned") / "sandbox").stat()  # the container's user's no longer: the host's root's alone
    assert (kept.st_uid, kept.st_mode & 0o777) == (0, 0o700)
    rescored = system_cli("rescore", run.path, env={})  # a new container on it: handed to its user again
    assert rescored.code == 0, rescored.output


def test_a_bare_pip_works_in_an_image_without_pip(tmp_path: Path, system_cli: SystemCli, docker_image: str) -> None:
    """The venv's pip shim ran `python -m pip`, which an image without python3-pip has not: a bare `pip` in pre_run
    failed (No module named pip) under docker and worked under tempdir; uv's pip stands in."""
    import zipfile

    wheel = tmp_path / "tasks" / "wheels" / "demo-0.1-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as archive:  # the smallest wheel: installed offline from the sandbox
        archive.writestr("demo/__init__.py", "")
        archive.writestr("demo-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 0.1\n")
        archive.writestr("demo-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr("demo-0.1.dist-info/RECORD", "")
    check = {"type": "run_command", "command": "pip list > pips.txt && pip3 list | grep -q demo", "description": "pip"}
    task = task_file(
        tmp_path / "tasks",
        "bare",
        agent={"type": "none"},
        sandbox={
            "driver": "docker",
            "python": {"env_packages": ["/sandbox/wheels/demo-0.1-py3-none-any.whl"]},
            "image": docker_image,
            "template_sources": [{"type": "template_dir", "path": "wheels", "mount_point": "wheels"}],
        },
        success_criteria=[check],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output + str(run.result("bare")["success_criteria_results"])


def test_a_rescore_keeps_the_sandbox_from_host_accounts_of_its_uid_and_walks_deep_folders(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """A rescore's container takes the preserved sandbox again (handed to the image's user, uid 1000, which a host
    account may share) while the evaluation's folder was open (0755): that account could change what was graded,
    or swap folders for links while root walked the tree. The folder is root's alone (0700) while the container
    holds it. And a thousand nested folders the agent made failed the rescore (os.walk's recursion)."""
    import time

    from coder_eval_dagster.core.sandbox.container import IMAGE_UID
    from coder_eval_dagster.core.trees import remove_tree

    nest = "python3 -c \"import os\nfor i in range(1100): os.mkdir('d'); os.chdir('d')\""
    task = replay_task_file(
        tmp_path / "tasks",
        "deep",
        [{"calls": [{"tool": "Bash", "command": nest}], "text": "done"}],
        sandbox={"driver": "docker", "python": None, "image": docker_image},
        success_criteria=[{"type": "run_command", "command": "sleep 3; test -d d/d/d", "description": "slow"}],
    )
    outcome, run = system_cli.run(task, env={})
    try:
        assert outcome.code == 0, outcome.output
        evaluation = run.evaluation("deep")
        rescore = system_cli.start("rescore", run.path, env={})
        seen: set[int] = set()
        while rescore.poll() is None:
            if (evaluation / "sandbox").stat().st_uid == IMAGE_UID:
                seen |= {evaluation.stat().st_mode & 0o777, (system_cli.runs / ".cache").stat().st_mode & 0o777}
            time.sleep(0.05)
        assert rescore.returncode == 0, rescore.communicate()
        assert seen == {0o700}
        assert run.result("deep")["final_status"] == "SUCCESS"
        assert (evaluation / "sandbox" / "d" / "d").is_dir()
    finally:  # pytest's own clean-up of old temporary folders recurses too
        remove_tree(run.evaluation("deep") / "sandbox", ignore_errors=True)


def test_a_call_cut_by_turn_timeout_in_a_container_ends_there_at_the_deadline(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic, docker_image: str
) -> None:
    """The cut ended nothing in the container: the call ran on through the CLI's grace to exit and into the
    criteria, and wrote into the sandbox after the deadline (as under tempdir, it ends at the cut)."""
    slow = "date +%s > out.txt; sleep 17; echo late > late.txt"  # (a loaded machine starts it up to 8 s in)
    fake = scripted_anthropic(Script([Turn(tools=[("Bash", {"command": slow})]), Turn(text="done")]))
    sandbox = {"driver": "docker", "python": None, "image": docker_image}
    past_its_end = "s=$(cat out.txt); while [ $(date +%s) -lt $((s + 19)) ]; do sleep 0.5; done"
    waits = [{"type": "run_command", "command": past_its_end, "description": "past the call's own end"}]
    task = claude_code_task(
        tmp_path / "tasks", "slow", sandbox=sandbox, run_limits={"turn_timeout": 15}, success_criteria=waits
    )
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    result = run.result("slow")
    assert result["final_status"] == "TIMEOUT", (result["error_message"], outcome.output)
    folder = run.evaluation("slow") / "sandbox"
    assert (folder / "out.txt").exists() and not (folder / "late.txt").exists()
