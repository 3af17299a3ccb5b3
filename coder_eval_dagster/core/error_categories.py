"""coder_eval's ``error_category`` of an evaluation that ended for a reason other than its criteria.

coder_eval writes it in task.json's ``error_details`` and each run.json row,
and its dashboards filter on it (its ``ErrorCategory`` values, kept as they
are). We know where the evaluation stopped (the stage that failed) and read
its message for the rest, as coder_eval reads its exceptions' messages.
"""

from __future__ import annotations

import re
from typing import Any

# A route or setting the harness lacks: no key, no CLI, a provider it does not route, an extra not installed.
CONFIG_ERRORS = (
    r"no api key|no (claude code|codex|opencode) cli|not installed|no route|not routed|model .*not found"
    r"|needs \w*_(api_key|base_url)|needs agent\.|needs the \w+ extra"
)
# What an agent's error says, in the order it is asked (the first that matches names the category).
AGENT_ERRORS = (
    ("agent_auth_error", r"\b40[13]\b|authentication|unauthori[sz]ed|invalid (x-)?api[ -]key|permission_error"),
    ("agent_rate_limit", r"\b429\b|rate.?limit"),
    ("agent_billing_error", r"credit balance|billing|insufficient (funds|credits|quota)"),
    ("agent_api_error", r"\b5\d\d\b|overloaded|api error|(dis)?connect|could not be reached|timed? ?out|network"),
    ("agent_config_error", CONFIG_ERRORS),
)
SANDBOX_ERRORS = (
    ("git_clone_error", r"\bgit\b|clone"),
    ("venv_creation_error", r"\bvenv\b|virtual env"),
    ("package_install_error", r"\bpip\b|install|requirements|\buv\b"),
    ("template_copy_error", r"template"),
)
STATUS_CATEGORIES = {
    "TIMEOUT": "agent_timeout",
    "TOKEN_BUDGET_EXCEEDED": "budget_exceeded",
    "COST_BUDGET_EXCEEDED": "budget_exceeded",
}
# The stage that failed (Evaluation.fail's ``where``) -> its component, as coder_eval names them.
COMPONENTS = {"agent": "agent", "sandbox setup": "sandbox", "pre_run": "sandbox", "criteria": "evaluator"}


def error_details(status: str, message: str | None, where: str | None) -> dict[str, Any] | None:
    """``{"error_category", "component"}`` of an evaluation that ended ``status`` at stage ``where`` with
    ``message``; None when it ran to a verdict (SUCCESS, FAILURE, MAX_TURNS_EXHAUSTED)."""
    if status in STATUS_CATEGORIES:
        return {"error_category": STATUS_CATEGORIES[status], "component": "agent"}
    if status != "ERROR":
        return None
    component = COMPONENTS.get(where or "", "harness")
    return {"error_category": _category(component, (message or "").lower()), "component": component}


def _category(component: str, text: str) -> str:
    if component == "agent":
        return _first_match(AGENT_ERRORS, text) or "agent_crash"
    if component == "sandbox":
        return _first_match(SANDBOX_ERRORS, text) or "sandbox_setup_error"
    if component == "evaluator":
        return "criterion_check_error"
    if "no space left" in text:
        return "disk_full"
    if "memoryerror" in text or "out of memory" in text:
        return "out_of_memory"
    return "unknown"


def _first_match(patterns: tuple[tuple[str, str], ...], text: str) -> str | None:
    return next((category for category, pattern in patterns if re.search(pattern, text)), None)
