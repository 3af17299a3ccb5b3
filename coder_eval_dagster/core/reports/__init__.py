"""Human and machine reports of a run: run.json, run.md, task.json, task.html."""
