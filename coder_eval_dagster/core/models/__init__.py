"""Pydantic models of the whole task format: the single source of truth.

Import from the submodules (``models.task``, ``models.agent`` ...): the
criterion models depend on ``models.agent``, so this package re-exports nothing.
"""
