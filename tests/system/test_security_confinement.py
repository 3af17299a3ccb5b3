"""What a sandboxed command can reach of the machine, through the installed CLI, as a hostile agent would try it.

A probe runs from every place a task or an agent runs commands (pre_run, a
replayed agent's Bash call, a run_command criterion, a claude-code Bash call),
under both drivers: it reads a file planted in the harness user's home, a
service on the host's loopback (directly, and through the proxy the sandbox
is given), a name in DNS, and writes into /tmp; and says where it works. What it saw is written into
the sandbox (kept in the run folder) and checked from outside: the file and
the service stay out of reach, the write stays in the sandbox's own /tmp, and
every refused connection is in task.json with its phase, never an ERROR.
``sandbox.network.allow`` lets one local server through (and refuses
another); ``open: true`` gives back the host's network.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import Script, Turn
from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key, replay_task_file, task_file

pytestmark = pytest.mark.slow

# Run as `python3 probe.py STAGE PLANTED SERVICE_URL...` in the sandbox (the image has python3, not curl);
# one line per attempt into probe-STAGE.txt.
PROBE = r"""
import http.client, os, socket, sys, urllib.parse, urllib.request
stage, planted, *urls = sys.argv[1:]
seen = []
def attempt(name, how):
    try:
        seen.append(f"{name}: {how()}")
    except Exception as exc:
        seen.append(f"{name}: failed {type(exc).__name__}: {exc}")
def proxied(url):
    proxy = urllib.parse.urlsplit(os.environ.get("HTTP_PROXY") or "http://no-proxy-given:1")
    connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=5)
    connection.request("GET", url)
    answer = connection.getresponse()
    return f"{answer.status} {answer.reason} {answer.read().decode().strip()}"
def written():
    with open(f"/tmp/coder-eval-probe-{stage}-{os.path.basename(planted)}", "w") as handle:
        handle.write(stage)
    return "written"
attempt("home", lambda: open(planted).read())
attempt("cwd", os.getcwd)
for url in urls:
    attempt(f"direct {url}", lambda: urllib.request.urlopen(url, timeout=5).read().decode())
    attempt(f"proxied {url}", lambda: proxied(url))
attempt("dns", lambda: socket.gethostbyname("pypi.org"))
attempt("tmp", written)
open(f"probe-{stage}.txt", "w").write("\n".join(seen) + "\n")
"""


class _Secret(BaseHTTPRequestHandler):
    body = b""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


@contextlib.contextmanager
def _service(body: str) -> Iterator[str]:
    """A service on the host's loopback answering every GET with ``body``: its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Secret,), {"body": body.encode()}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def planted() -> Iterator[tuple[Path, str]]:
    """A credential-like file in the harness user's own home (~/.aws), removed afterwards."""
    folder = Path.home() / ".aws"
    made_by_tests = folder / ".coder-eval-made"  # tests on other workers plant beside this one: the last removes it
    if not folder.exists():
        folder.mkdir(exist_ok=True)
        made_by_tests.touch()
    secret = f"awsS3cr3t{secrets.token_hex(16)}"
    path = folder / f"coder-eval-planted-{secrets.token_hex(4)}"
    path.write_text(secret)
    try:
        yield path, secret
    finally:
        path.unlink()
        with contextlib.suppress(OSError):  # another test's file still there, or another cleanup was first
            if [entry.name for entry in folder.iterdir()] == [made_by_tests.name]:
                made_by_tests.unlink()
                folder.rmdir()


def _probe(stage: str, planted: Path, *urls: str) -> str:
    return " ".join(["python3 probe.py", stage, str(planted), *urls])


def _probing_task(folder: Path, planted: Path, urls: list[str], sandbox: dict[str, Any]) -> Path:
    """A replay task probing from pre_run, a Bash call and a run_command criterion; plus a plain read of the file."""
    probe_file = {"type": "starter_files", "files": [{"path": "probe.py", "content": PROBE}]}
    return replay_task_file(
        folder,
        "probe",
        [{"calls": [{"tool": "Bash", "command": _probe("agent", planted, *urls)}]}],
        sandbox={"python": None, **sandbox, "template_sources": [probe_file]},
        pre_run=[
            {"command": _probe("pre_run", planted, *urls)},
            {"command": f"cat {planted}", "fail_on_error": False},
        ],
        success_criteria=[
            {"type": "run_command", "command": _probe("score", planted, *urls), "description": "probes"},
        ],
    )


def _seen(sandbox: Path, stage: str) -> dict[str, str]:
    lines = (sandbox / f"probe-{stage}.txt").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines)


def _confined(seen: dict[str, str], secret: str, service: str, body: str) -> None:
    """What a probe saw under the default policy: nothing of the host, nothing of the network."""
    assert secret not in seen["home"] and seen["home"].startswith(("failed FileNotFound", "failed Permission")), seen
    assert body not in seen[f"direct {service}"], seen  # the sandbox's own loopback: nothing listens there
    assert seen[f"proxied {service}"].startswith("403 Forbidden by coder-eval egress policy"), seen
    assert seen["dns"].startswith("failed gaierror"), seen
    assert seen["tmp"] == "written", seen  # its own /tmp
    assert seen["cwd"] == "/sandbox", seen  # a working directory naming no run, variant or row


def _refused(result: dict[str, Any], host: str, port: int) -> set[str]:
    return {r["phase"] for r in result["refused_connections"] if (r["host"], r["port"]) == (host, port)}


def _port(url: str) -> int:
    """The port of a loopback service's URL (``http://127.0.0.1:PORT/``)."""
    return int(url.rsplit(":", 1)[1].strip("/"))


def _sandbox(driver: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    """The sandbox block of a test parametrized over the drivers (docker: the test image, built once)."""
    return {"driver": driver, "image": request.getfixturevalue("docker_image")} if driver == "docker" else {}


@pytest.mark.parametrize("driver", ["tempdir", "docker"])
def test_no_stage_reads_the_home_reaches_a_host_service_or_dns_or_writes_the_hosts_tmp(
    tmp_path: Path, system_cli: SystemCli, planted: tuple[Path, str], driver: str, request: pytest.FixtureRequest
) -> None:
    path, secret = planted
    sandbox = _sandbox(driver, request)
    body = f"host-service-{secrets.token_hex(8)}"
    with _service(body) as service:
        task = _probing_task(tmp_path / "tasks", path, [service], sandbox)
        outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("probe")
    assert result["final_status"] == "SUCCESS", (result["error"], result["criteria"])  # refusals are no ERROR
    box = run.evaluation("probe") / "sandbox"
    for stage in ("pre_run", "agent", "score"):
        _confined(_seen(box, stage), secret, service, body)
        assert not Path(f"/tmp/coder-eval-probe-{stage}-{path.name}").exists()  # the host's /tmp was never written
    port = _port(service)
    assert _refused(result, "127.0.0.1", port) == {"pre_run", "agent", "score"}, result["refused_connections"]
    probe_run, cat_run = result["pre_run_results"]
    assert f"127.0.0.1:{port} refused by the sandbox's network policy (pre_run)" in probe_run["stderr"]
    assert cat_run["exit_code"] != 0 and secret not in json.dumps(result)
    if driver == "tempdir":  # (in a container the host's home simply does not exist)
        assert f"{path} is not visible in the sandbox (file confinement)" in cat_run["stderr"]


def test_a_claude_code_bash_call_reaches_its_api_and_nothing_else(
    tmp_path: Path, system_cli: SystemCli, planted: tuple[Path, str], scripted_anthropic
) -> None:
    path, secret = planted
    body = f"host-service-{secrets.token_hex(8)}"
    with _service(body) as service:
        fake = scripted_anthropic(
            Script([Turn(tools=[("Bash", {"command": _probe("agent", path, service)})]), Turn(text="probed")])
        )
        probe_file = {"type": "starter_files", "files": [{"path": "probe.py", "content": PROBE}]}
        task = claude_code_task(
            tmp_path / "tasks",
            "claude",
            sandbox={"python": None, "template_sources": [probe_file]},
            success_criteria=[{"type": "file_exists", "path": "probe-agent.txt", "description": "probed"}],
        )
        outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert outcome.code == 0, outcome.output
    assert len(fake.script.agent_requests()) == 2, fake.script.paths  # the API, through the model proxy
    result = run.result("claude")
    assert result["final_status"] == "SUCCESS", (result["error"], result["criteria"])
    _confined(_seen(run.evaluation("claude") / "sandbox", "agent"), secret, service, body)
    assert _refused(result, "127.0.0.1", _port(service)) == {"agent"}


@pytest.mark.parametrize("driver", ["tempdir", "docker"])
def test_an_allowed_local_server_is_reached_and_another_is_refused_and_reported(
    tmp_path: Path, system_cli: SystemCli, planted: tuple[Path, str], driver: str, request: pytest.FixtureRequest
) -> None:
    path, _ = planted
    sandbox = _sandbox(driver, request)
    with _service("allowed-server") as allowed, _service("other-server") as other:
        allowed_port, other_port = _port(allowed), _port(other)
        sandbox["network"] = {"allow": [f"127.0.0.1:{allowed_port}"]}
        outcome, run = system_cli.run(_probing_task(tmp_path / "tasks", path, [allowed, other], sandbox), env={})
    assert outcome.code == 0, outcome.output
    result = run.result("probe")
    assert result["final_status"] == "SUCCESS", (result["error"], result["criteria"])
    for stage in ("pre_run", "agent", "score"):
        seen = _seen(run.evaluation("probe") / "sandbox", stage)
        assert seen[f"direct {allowed}"] == "allowed-server", seen  # at its own address, forwarded to the host's
        assert seen[f"proxied {allowed}"] == "200 OK allowed-server", seen
        assert "other-server" not in seen[f"direct {other}"], seen
        assert seen[f"proxied {other}"].startswith("403 Forbidden by coder-eval egress policy"), seen
    assert _refused(result, "127.0.0.1", other_port) == {"pre_run", "agent", "score"}
    assert _refused(result, "127.0.0.1", allowed_port) == set()


def test_an_open_network_gives_back_the_hosts(tmp_path: Path, system_cli: SystemCli, planted: tuple[Path, str]) -> None:
    """``open: true``: today's network (a host service, DNS); the file system stays confined."""
    path, secret = planted
    with _service("host-service") as service:
        task = _probing_task(tmp_path / "tasks", path, [service], {"network": {"open": True}})
        outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    seen = _seen(run.evaluation("probe") / "sandbox", "pre_run")
    assert seen[f"direct {service}"] == "host-service" and not seen["dns"].startswith("failed"), seen
    assert secret not in seen["home"]
    assert run.result("probe")["refused_connections"] == []


# Run as `python3 kernel.py ROW` in the sandbox: what the host's kernel lets a command (root of the harness's user
# on CI) change; one line per attempt into kernel-ROW.txt. Nothing here changes the host when it is refused.
KERNEL_PROBE = r"""
import ctypes, fcntl, os, socket, struct, subprocess, sys
row, seen = sys.argv[1], {}
for path in ("/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/proc/sys/net/ipv4/ip_default_ttl"):
    seen[path] = "writable" if os.access(path, os.W_OK) else "read-only"
try:
    seen["timer_list"] = "shown" if open("/proc/timer_list").read() else "masked"  # the host kernel's timers
except PermissionError:
    seen["timer_list"] = "masked"
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(probe, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
try:
    fcntl.ioctl(probe, 0x8914, struct.pack("16sH", b"lo", flags))  # the same flags back: a change, but harmless
    seen["network"] = "changed"
except PermissionError:
    seen["network"] = "refused"
queues = subprocess.run(["ipcs", "-q"], capture_output=True, text=True).stdout
seen["queues before"] = str(sum(line.startswith("0x") for line in queues.splitlines()))
made = subprocess.run(["ipcmk", "-Q"], capture_output=True, text=True)
seen["queue made"] = str(made.returncode == 0)
nested = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, text=True)
seen["nested user namespace"] = "made" if nested.returncode == 0 else "refused"
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
USER_KEYRING, SEARCH = -4, 10
found = libc.syscall(KEYCTL, SEARCH, USER_KEYRING, b"user", b"coder-eval-probe", 0)
seen["key before"] = "none" if found < 0 else "found"
added = libc.syscall(ADD_KEY, b"user", b"coder-eval-probe", b"x", 1, USER_KEYRING)
seen["key made"] = str(added > 0)
open(f"kernel-{row}.txt", "w").write("".join(f"{k}={v}\n" for k, v in seen.items()))
"""


def _queues() -> str:
    """The host's SysV message queues, as ``ipcs`` lists them."""
    return subprocess.run(["ipcs", "-q"], capture_output=True, text=True, timeout=30, check=True).stdout


def test_commands_cannot_change_the_kernel_or_leave_state_for_the_next_evaluation(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """As root of the harness's user, a command could write core_pattern (the kernel then ran a program of its
    choosing as the host's root), change its namespace's network, leave SysV objects on the host and keys in its
    keyring for the next evaluation to find, and make a user namespace of its own where it mounted the host's
    cgroup tree writable: /proc's knobs are read-only, the network, IPC and keys are the namespace's own and
    cleared between evaluations that reuse a namespace, and no user namespace can be made inside."""
    queues_before = _queues()
    task = replay_task_file(
        tmp_path / "tasks",
        "kernel",
        [{"calls": [{"tool": "Bash", "command": "python3 kernel.py ${row.id}-agent"}]}],
        sandbox={
            "python": None,
            "template_sources": [{"type": "starter_files", "files": [{"path": "kernel.py", "content": KERNEL_PROBE}]}],
        },
        dataset={"rows": [{"id": "r1"}, {"id": "r2"}]},
        pre_run=[{"command": "python3 kernel.py ${row.id}"}],
        success_criteria=[{"type": "file_exists", "path": "kernel.py", "description": "probed"}],
    )
    outcome, run = system_cli.run(task, "--concurrency", "1", env={})
    assert outcome.code == 0, outcome.output
    for row in ("r1", "r2"):
        for stage in (row, f"{row}-agent"):
            seen = dict(
                line.split("=", 1)
                for line in (run.evaluation(f"kernel/{row}") / "sandbox" / f"kernel-{stage}.txt")
                .read_text()
                .splitlines()
            )
            assert seen["/proc/sys/kernel/core_pattern"] == "read-only", (stage, seen)
            assert (
                seen["/proc/sysrq-trigger"] == "read-only" and seen["/proc/sys/net/ipv4/ip_default_ttl"] == "read-only"
            )
            assert seen["timer_list"] == "masked" and seen["network"] == "refused", (stage, seen)
            assert seen["queue made"] == "True", (stage, seen)
            # none of the other row's: its own pre_run's queue and key when its agent runs
            assert seen["queues before"] == ("0" if stage == row else "1"), (stage, seen)
            assert seen["key made"] == "True" and seen["key before"] == ("none" if stage == row else "found"), seen
            assert seen["nested user namespace"] == "refused", (stage, seen)
    assert _queues() == queues_before  # nothing was left on the host


def test_a_pre_run_the_network_policy_refused_says_so_in_its_error(tmp_path: Path, system_cli: SystemCli) -> None:
    """A coder_eval task's `pip install` in pre_run, on a confined network: the ERROR said only that the command
    failed; why (a host the policy refused, said in the command's stderr) was in task.json alone."""
    fetch = "python3 -c \"import urllib.request; urllib.request.urlopen('http://blocked.example/', timeout=10)\""
    task = task_file(
        tmp_path / "tasks",
        "refused",
        agent={"type": "none"},
        pre_run=[{"command": fetch}],
        sandbox={"python": None, "network": {"allow": ["pypi.org:443"]}},
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    result = run.result("refused")
    assert result["final_status"] == "ERROR"
    assert result["error_message"].endswith("; the network policy refused blocked.example:80 (sandbox.network.allow)")
    assert "the network policy refused blocked.example:80" in outcome.out


def _agentless_pre_run(folder: Path, task_id: str, command: str, **task: Any) -> Path:
    """An agentless task whose pre_run is ``command`` and whose one criterion always passes."""
    ran = [{"type": "run_command", "command": "true", "description": "ran"}]
    return task_file(
        folder / "tasks", task_id, agent={"type": "none"}, pre_run=[{"command": command}], success_criteria=ran, **task
    )


def test_a_flood_of_refused_connections_is_recorded_once_each_and_bounded(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """A command asking the proxy for 300 distinct 30,000-character names (and one of them 50 times more): each
    refusal had a task.json entry and a stderr line of its full name; a few seconds of that filled the harness's
    memory and a 180 MB task.json."""
    flood = (
        'python3 -c "import os, socket\n'
        "def ask(name):\n"
        "    s = socket.create_connection(('127.0.0.1', int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])))\n"
        "    s.sendall(f'CONNECT {name}:443 HTTP/1.1\\r\\n\\r\\n'.encode()); s.recv(100); s.close()\n"
        "for i in range(300): ask(str(i) + 'a' * 30000)\n"
        "for i in range(50): ask('again.example')\""
    )
    task = _agentless_pre_run(
        tmp_path, "flood", flood, sandbox={"python": None, "network": {"allow": ["pypi.org:443"]}}
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("flood")
    refused = result["refused_connections"]
    assert len(refused) == 100 and {r["phase"] for r in refused} == {"pre_run"}
    assert max(len(r["host"]) for r in refused) == 253
    (pre_run,) = result["pre_run_results"]
    notes = [line for line in pre_run["stderr"].splitlines() if line.startswith("[coder-eval: ")]
    assert len(notes) == 101 and notes[-1] == (
        "[coder-eval: 250 more connection(s) refused by the sandbox's network policy, not listed]"
    )
    assert (run.evaluation("flood") / "task.json").stat().st_size < 200_000


def test_a_folder_on_path_shows_neither_the_project_nor_a_runs_folder_inside_it(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """`PATH=$PATH:$PWD` (or a CI workspace on PATH) showed commands the project whole, read-only: its .env, its
    references, every earlier evaluation under ./runs."""
    project = system_cli.folder
    (project / ".env").write_text("ANTHROPIC_API_KEY=sk-ant-planted-in-dotenv\n")
    probe = f"cat {project}/.env; ls {project}/runs; test ! -e {project}/.env"
    task = _agentless_pre_run(project, "onpath", probe)
    on_path = {"PATH": f"{os.environ['PATH']}:{project}"}
    outcome, run = system_cli.run(task, env=on_path)
    assert outcome.code == 0, outcome.output  # the project is not shown: the probe sees no .env
    assert "sk-ant-planted" not in json.dumps(run.result("onpath"))
    elsewhere = tmp_path / "tools"  # a runs folder in another folder on PATH: refused, not shown
    (elsewhere / "runs").mkdir(parents=True)
    refused = system_cli(
        "run", task, "--runs-dir", elsewhere / "runs", env={"PATH": f"{os.environ['PATH']}:{elsewhere}"}
    )
    assert refused.code == 1, refused.output
    (result,) = (elsewhere / "runs").glob("*T*/default/onpath/00/task.json")
    error = json.loads(result.read_text())["error_message"]
    assert f"lies in {elsewhere}, which commands see read-only" in error, error


@contextlib.contextmanager
def _folder_in_opt() -> Iterator[Path]:
    """A folder under /opt, a system folder every sandbox shows read-only; removed after."""
    folder = Path(tempfile.mkdtemp(dir="/opt", prefix="coder-eval-test-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_a_project_under_opt_shows_empty_but_for_a_path_folder_in_it() -> None:
    """A project under /opt (or /usr/local/src) lay in a folder every sandbox shows read-only: commands read its
    .env, its references and every earlier evaluation under ./runs. It shows empty now, but for a PATH folder in it;
    a runs folder elsewhere under /opt is refused, not shown."""
    with _folder_in_opt() as project, _folder_in_opt() as elsewhere:
        (project / ".env").write_text("ANTHROPIC_API_KEY=sk-ant-planted-under-opt\n")
        tools = project / "tools"
        tools.mkdir()
        (tools / "project-tool").write_text("#!/bin/sh\necho the tool ran\n")
        (tools / "project-tool").chmod(0o755)
        probe = f"project-tool; ls -A {project}; cat {project}/.env; test ! -e {project}/runs"
        task = _agentless_pre_run(project, "underopt", probe)
        cli, on_path = SystemCli(project), {"PATH": f"{os.environ['PATH']}:{tools}"}
        outcome, run = cli.run(task, env=on_path)
        assert outcome.code == 0, outcome.output
        (pre_run,) = run.result("underopt")["pre_run_results"]
        assert pre_run["stdout"].splitlines() == ["the tool ran", "tools"], pre_run
        assert "sk-ant-planted" not in json.dumps(run.result("underopt"))
        refused = cli("run", task, "--runs-dir", elsewhere / "runs", env=on_path)
        assert refused.code == 1, refused.output
        (result,) = (elsewhere / "runs").glob("*T*/default/underopt/00/task.json")
        error = json.loads(result.read_text())["error_message"]
        assert "lies in /opt, which commands see read-only" in error, error


def test_the_view_hides_a_home_under_opt_and_a_venv_run_from_but_its_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """A service user's home under /opt (its ~/.aws) was shown whole; and the code image runs in its venv
    (/opt/coder-eval, its working folder): the mask of the working folder hid its packages and the agent CLIs,
    and leaving it whole showed the .env, ./runs and .dagster beside them (two reviews' findings). What the holder
    is given to build, computed in this process."""
    from coder_eval_dagster.core.sandbox import holder

    with _folder_in_opt() as venv, _folder_in_opt() as home:
        for part in ("bin", "lib"):
            (venv / part).mkdir()
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / ".env").write_text("SECRET=planted\n")
        monkeypatch.chdir(venv)
        monkeypatch.setattr(sys, "prefix", str(venv))
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster-home"))  # made now: the run makes it a moment later
        view = holder._view.__wrapped__()  # not this process's cached view
        operations = list(zip(view.operations, view.operations[1:], strict=False))
        assert sorted(path for op, path in operations if op == "mask") == sorted([str(venv), str(home)])
        assert {str(venv / part) for part in ("bin", "lib", "pyvenv.cfg")} <= set(view.shown)
        assert not any(path.startswith(f"{venv}/.env") for path in view.shown)
        assert (home / "dagster-home").is_dir()
