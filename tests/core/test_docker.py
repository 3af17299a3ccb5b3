"""The docker driver against a real engine: confinement, limits, OOM reporting, cleanup, tool placement."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.sandbox import engine, open_sandbox

from ..support.fake_anthropic import API_KEY, FakeAnthropic, Script, Turn
from ..support.fake_openai import FakeResponses, ResponsesScript, Step
from ..support.helpers import (
    agentless_task,
    criterion,
    docker_sandbox,
    evaluate_claude_code,
    evaluate_replay,
    evaluate_task,
    run_cli,
    task_with,
    write,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("docker_image")]


def container_uid() -> str:
    """The user sandboxed commands run as: the image's (uid 1000) when the harness is root, else the harness's."""
    return "1000" if os.geteuid() == 0 else str(os.geteuid())


def containers_under(folder: Path) -> list[str]:
    """The ids of the sandbox containers of evaluations below ``folder`` (their folder label)."""
    found = engine.labelled_containers(engine.LABEL)
    return [c["Id"] for c in found if c["Labels"].get("coder-eval.folder", "").startswith(str(folder))]


def test_a_command_runs_in_the_container_and_a_criterion_reads_its_file_on_the_host(tmp_path: Path) -> None:
    result = evaluate_task(
        tmp_path,
        agentless_task(
            sandbox=docker_sandbox(),
            pre_run=[{"command": "test -f /.dockerenv && echo inside > proof.txt"}],
            success_criteria=[criterion("file_contains", path="proof.txt", includes=["inside"])],
        ),
    )
    assert result.final_status == "SUCCESS", result.error
    assert not containers_under(tmp_path)


def test_a_1gb_allocation_under_128mb_is_oom_killed_and_reported(tmp_path: Path) -> None:
    result = evaluate_task(
        tmp_path,
        agentless_task(
            sandbox=docker_sandbox(limits={"max_memory_mb": 128}),
            success_criteria=[criterion("run_command", command="python3 -c 'bytearray(1 << 30)'")],
        ),
    )
    (check,) = result.criteria
    assert result.final_status == "FAILURE"
    assert check.details["exit_code"] == 137
    assert "OOMKilled" in check.error and "max_memory_mb=128" in check.error
    html = (tmp_path / "run" / "default" / "t1" / "01" / "task.html").read_text(encoding="utf-8")
    assert "OOMKilled" in html


def _host_processes_with(token: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(entry.name)
        except OSError:
            continue
    return found


def test_a_fork_bomb_hits_the_pids_limit_and_the_evaluation_ends_within_its_timeout(tmp_path: Path) -> None:
    token = f"bomb{uuid.uuid4().hex[:8]}"
    # the shell forks once (the bomb's subshell, before any limit), then spins on builtins until its timeout
    # kills the whole group: a shell whose own fork fails at the limit would exit and leave the bomb running
    bomb = f"{token}() {{ {token} | {token} & }}; ({token}) & while :; do :; done"
    started = time.monotonic()
    result = evaluate_task(
        tmp_path,
        agentless_task(
            sandbox=docker_sandbox(limits={"max_pids": 64, "max_cpus": 0.25}),
            pre_run=[{"command": bomb, "timeout": 5, "fail_on_error": False}],
            success_criteria=[criterion("run_command", command="echo still usable")],
        ),
    )
    assert time.monotonic() - started < 60  # (10 s loaded; the bug: never)
    (hook,) = result.pre_run_results
    assert hook.timed_out and "fork" in hook.stderr.lower()  # forks refused at the limit, all killed at the timeout
    assert result.final_status == "SUCCESS", result.criteria[0].error
    assert not _host_processes_with(token)
    assert not containers_under(tmp_path)


def test_a_write_to_a_host_path_from_the_container_does_not_reach_the_host(tmp_path: Path) -> None:
    host_tmp, outside = Path("/tmp") / f"escape-{uuid.uuid4().hex[:8]}", tmp_path / "outside"
    result = evaluate_task(
        tmp_path,
        agentless_task(
            sandbox=docker_sandbox(),
            pre_run=[
                {"command": f"echo escaped > {host_tmp}"},
                {"command": f"mkdir -p {outside} && echo escaped > {outside}/f", "fail_on_error": False},
            ],
            success_criteria=[criterion("run_command", command=f"cat {host_tmp}", expected_stdout="escaped")],
        ),
    )
    assert result.final_status == "SUCCESS", result.error  # the container wrote its own /tmp ...
    assert not host_tmp.exists() and not outside.exists()  # ... the host saw neither write
    assert result.pre_run_results[1].ok  # the sandbox is at /sandbox: that path is the container's own /tmp


def test_a_link_the_container_made_out_of_the_sandbox_is_not_followed_on_the_host(tmp_path: Path) -> None:
    result = evaluate_task(
        tmp_path,
        agentless_task(
            sandbox=docker_sandbox(),
            pre_run=[
                {"command": "ln -s /etc/hostname absolute && ln -s ../../../../../../../../etc/hostname relative"}
            ],
            success_criteria=[
                criterion("file_exists", path="absolute"),
                criterion("file_contains", path="relative", includes=[""]),
            ],
        ),
    )
    assert [c.passed for c in result.criteria] == [False, False]
    assert all("leaves the sandbox" in (c.error or "") for c in result.criteria)


def test_a_hung_command_is_killed_at_its_timeout_inside_the_container(tmp_path: Path) -> None:
    config = SandboxConfig.model_validate(docker_sandbox())
    sandbox = open_sandbox(tmp_path / "ev" / "sandbox", config)
    sandbox.create(tmp_path)
    try:
        marker = f"hung{uuid.uuid4().hex[:8]}"
        hung = sandbox.run(f"python3 -c 'import time; time.sleep(300)' {marker} & sleep 300", timeout=1)
        assert hung.timed_out and hung.exit_code is None and hung.duration_s < 8  # (its 1 s, a loaded exec)
        left = sandbox.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '", timeout=10)
        assert left.ok and marker not in left.stdout and "sleep 300" not in left.stdout
    finally:
        sandbox.close()
    assert not containers_under(tmp_path)


def test_replay_bash_calls_run_inside_the_container(tmp_path: Path) -> None:
    turns = [{"calls": [{"tool": "Bash", "command": "test -f /.dockerenv && id -u"}]}]
    result = evaluate_replay(
        tmp_path,
        turns,
        sandbox=docker_sandbox(),
        success_criteria=[criterion("command_executed", tool_name="Bash", command_pattern="dockerenv")],
    )
    (call,) = result.trajectory[0].calls
    assert call.status == "success" and call.output.strip() == container_uid()


def _tiny_wheel(folder: Path) -> str:
    """A one-module wheel, so that the venv installs something with no network."""
    name = "demo_pkg-0.1-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / name, "w") as wheel:
        wheel.writestr("demo_pkg.py", "ANSWER = 42\n")
        wheel.writestr("demo_pkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 0.1\n")
        wheel.writestr(
            "demo_pkg-0.1.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr("demo_pkg-0.1.dist-info/RECORD", "")
    return name


def test_the_venv_is_made_inside_the_container_with_uv(tmp_path: Path) -> None:
    wheel = _tiny_wheel(tmp_path / "template")
    result = evaluate_task(
        tmp_path,
        agentless_task(
            sandbox={
                "driver": "docker",
                "network": "none",
                "python": {"env_packages": [f"./{wheel}"]},
                "template_sources": [{"type": "template_dir", "path": "template"}],
            },
            success_criteria=[
                criterion("run_command", command='test "$(command -v python)" = "$VIRTUAL_ENV/bin/python"'),
                criterion(
                    "run_command", command="python -c 'import demo_pkg; print(demo_pkg.ANSWER)'", expected_stdout="42"
                ),
            ],
        ),
    )
    assert result.final_status == "SUCCESS", result.error or [c.details for c in result.criteria]
    assert (tmp_path / "run" / "default" / "t1" / "01" / "sandbox" / ".venv" / "bin" / "python").exists()


def test_engine_down_is_one_clear_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    engine.client.cache_clear()
    try:
        result = evaluate_task(tmp_path, agentless_task(sandbox=docker_sandbox()))
    finally:
        engine.client.cache_clear()
    assert result.final_status == "ERROR"
    assert "\n" not in result.error and "DOCKER_HOST" in result.error and "no Docker engine answers" in result.error


def test_a_command_with_the_engine_down_is_the_sandbox_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rescore's criteria with no engine: each scored 0 (a FAILURE charged to the model); it is the machine's."""
    from coder_eval_dagster.core.sandbox.holder import SandboxUnavailable

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    engine.client.cache_clear()
    try:
        sandbox = open_sandbox(tmp_path / "ev" / "sandbox", SandboxConfig.model_validate(docker_sandbox()))
        with pytest.raises(SandboxUnavailable, match="no Docker engine answers"):
            sandbox.run("true", timeout=10)
    finally:
        engine.client.cache_clear()


def test_sandbox_build_with_the_engine_down_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    engine.client.cache_clear()
    try:
        done = run_cli("sandbox", "build")
    finally:
        engine.client.cache_clear()
    assert done.code == 1 and done.err.count("\n") == 1 and "DOCKER_HOST" in done.err


def test_a_stage_that_finds_no_container_starts_a_fresh_one_on_the_same_folder(tmp_path: Path) -> None:
    sandbox = open_sandbox(tmp_path / "ev" / "sandbox", SandboxConfig.model_validate(docker_sandbox()))
    sandbox.create(tmp_path)
    assert sandbox.run("echo kept > kept.txt", timeout=10).ok
    sandbox.close()  # the evaluation ended; a rescore comes later
    try:
        again = sandbox.run("test -f /.dockerenv && cat kept.txt", timeout=10)
        assert again.ok and again.stdout == "kept\n"
        assert len(containers_under(tmp_path)) == 1
    finally:
        sandbox.close()
    assert not containers_under(tmp_path)


def test_a_missing_image_names_the_build_command(tmp_path: Path) -> None:
    result = evaluate_task(tmp_path, agentless_task(sandbox=docker_sandbox(image="coder-eval-none:0")))
    assert result.final_status == "ERROR" and "coder-eval sandbox build" in result.error


def test_sandbox_build_is_skipped_while_its_inputs_are_unchanged(docker_image: str) -> None:
    done = run_cli("sandbox", "build", "--base", "debian-local", "--tag", docker_image)
    assert done.code == 0 and "up to date" in done.out


# ----------------------------------------------------------------------------- agents


def test_claude_code_tool_calls_run_inside_the_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script(
        [
            Turn(tools=[("Bash", {"command": "test -f /.dockerenv && id -u > where.txt"})]),
            Turn(tools=[("Write", {"file_path": str(tmp_path / "escape.txt"), "content": "x"})]),
            Turn(text="done"),
        ]
    )
    with FakeAnthropic(script) as url:
        for name, value in {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": API_KEY,
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("API_BACKEND", "direct")
        result = evaluate_claude_code(
            tmp_path,
            [criterion("file_contains", path="where.txt", includes=[container_uid()])],
            sandbox={"driver": "docker", "python": None},  # confined: the model proxy through the forwarder
        )
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    calls = [c for t in result.trajectory for c in t.calls]
    assert [c.tool for c in calls] == ["Bash", "Write"]
    assert not (tmp_path / "escape.txt").exists()  # the Write tool wrote the container's file system, not the host's
    assert not containers_under(tmp_path)


def test_codex_commands_run_inside_the_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = ResponsesScript([Step(commands=["test -f /.dockerenv && id -u > where.txt"]), Step(text="done")])
    with FakeResponses(script) as url:
        monkeypatch.setenv("CODEX_BASE_URL", url)
        monkeypatch.setenv("CODEX_API_KEY", "sk-codex-test-0123456789")
        result = evaluate_task(
            tmp_path,
            task_with(
                agent={"type": "codex", "model": "gpt-fake"},
                sandbox={"driver": "docker", "python": None},  # confined: the model proxy through the forwarder
                success_criteria=[criterion("file_contains", path="where.txt", includes=[container_uid()])],
            ),
        )
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    assert [c.tool for t in result.trajectory for c in t.calls] == ["Bash"]
    assert not containers_under(tmp_path)


# ----------------------------------------------------------------------------- cleanup of whole runs


def _cli(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "coder-eval"), *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _slow_docker_task(tmp_path: Path, name: str) -> Path:
    """Two rows: `quick` is done with its pre_run at once (its container then idles), `slow` sleeps in it."""
    return write(
        tmp_path / f"{name}.yaml",
        f"""
        task_id: {name}
        description: slow
        agent: {{type: none}}
        dataset: {{rows: [{{id: quick}}, {{id: slow}}]}}
        sandbox: {{driver: docker, network: none, python: null}}
        pre_run: [{{command: "touch started; case $PWD in */quick/*) ;; *) sleep 120;; esac", timeout: 200}}]
        success_criteria: [{{type: run_command, command: "true", description: t}}]
        """,
    )


def _wait_for_containers(tmp_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(list(tmp_path.glob("runs/**/sandbox/started"))) < 2:
        assert time.monotonic() < deadline, "the pre_run commands never started"
        time.sleep(0.2)
    assert len(containers_under(tmp_path)) == 2


def test_no_container_is_left_after_ctrl_c(tmp_path: Path) -> None:
    task = _slow_docker_task(tmp_path, "slow")
    process = _cli(tmp_path, "run", str(task), "--runs-dir", str(tmp_path / "runs"), "--concurrency", "2")
    _wait_for_containers(tmp_path)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert not containers_under(tmp_path)  # the busy one and the idle one


def test_containers_of_a_killed_run_are_removed_by_the_next_run(tmp_path: Path) -> None:
    task = _slow_docker_task(tmp_path, "slow")
    process = _cli(tmp_path, "run", str(task), "--runs-dir", str(tmp_path / "runs"), "--concurrency", "2")
    _wait_for_containers(tmp_path)
    process.kill()
    process.communicate(timeout=30)
    # kill -9 left its containers behind (their records too; another test's run may already be sweeping them) ...
    assert len(list(tmp_path.glob("runs/**/container.json"))) == 2
    write(
        tmp_path / "next" / "quick.yaml",
        """
        task_id: quick
        description: quick
        agent: {type: none}
        sandbox: {driver: docker, network: none, python: null}
        success_criteria: [{type: run_command, command: "true", description: t}]
        """,
    )
    nxt = _cli(tmp_path, "run", "next/quick.yaml", "--runs-dir", "runs-next")  # relative paths mount too
    _, err = nxt.communicate(timeout=120)
    assert nxt.returncode == 0, err
    assert not containers_under(tmp_path)  # ... and the next run swept it


def test_a_container_made_from_inside_a_run_container_belongs_to_that_container(docker_image: str) -> None:
    """A run container shares the host's name (host network) but not its pids: its containers are its own.

    A sweep in one run container once took another's live sandbox containers for orphans (their creator's
    pid is not visible from there) and removed them mid-run.
    """
    import docker

    engine_client = docker.from_env(timeout=60)
    owner = engine_client.containers.run(docker_image, ["sleep", "60"], detach=True, network_mode="host")
    try:
        mounts = engine_client.containers.get(owner.id).exec_run(["cat", "/proc/self/mountinfo"]).output.decode()
        assert engine._CONTAINER_MOUNT.search(mounts).group(1) == owner.id  # what owner_label() reads in there
        assert not engine._orphaned(f"{engine.CONTAINER_OWNER}{owner.id}")  # alive: never swept
    finally:
        owner.remove(force=True)
    assert engine._orphaned(f"{engine.CONTAINER_OWNER}{owner.id}")  # gone: its containers are swept
    host = engine.owner_label()
    assert not host.startswith(engine.CONTAINER_OWNER) and not engine._orphaned(host)  # this process, on the host


def test_the_end_of_a_cli_run_removes_the_containers_it_left(tmp_path: Path, docker_image: str) -> None:
    """A run whose step failed left its evaluations' containers (and what ran in them) until the next docker run
    swept them: the CLI's run is one process, so at its end it removes what that process started."""
    from coder_eval_dagster.core.sandbox.container import remove_own_containers
    from coder_eval_dagster.core.sandbox.process import Interrupt

    sandbox = open_sandbox(tmp_path / "ev" / "sandbox", SandboxConfig.model_validate(docker_sandbox()))
    sandbox.create(tmp_path)
    assert sandbox.run("true", timeout=10).ok and len(containers_under(tmp_path)) == 1
    # another run's container with the same owner label (inside a container every process has that container's)
    other = engine.client().containers.create(
        docker_image,
        ["sleep", "60"],
        labels={engine.LABEL: "sandbox", engine.LABEL_OWNER: engine.owner_label(), engine.LABEL_FOLDER: str(tmp_path)},
    )
    try:
        remove_own_containers(Interrupt())  # a step process's exit, not interrupted: they stay for later steps
        assert len(containers_under(tmp_path)) == 2
        remove_own_containers()
        assert containers_under(tmp_path) == [other.id]
    finally:
        other.remove(force=True)
