"""The exit codes of every `coder-eval` command, in one place (documented in docs/running.md)."""

OK = 0  # every gating task passed and every suite threshold was met (or: the command did what was asked)
FAILED = 1  # a gating task failed, a suite threshold was missed, or the run did not complete
USAGE = 2  # invalid input or usage: the problems are printed, nothing ran
INTERNAL = 3  # a bug in coder-eval: one line says what broke; the run folder keeps what finished
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): what finished is kept; `coder-eval run --resume` finishes the run
