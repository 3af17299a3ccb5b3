"""Pydantic models of the whole task format: the single source of truth.

Import from the submodules (``models.task``, ``models.agent`` ...): this
package re-exports nothing, so that a module importing one of them
(``models.criterion`` from a criterion, ``models.results`` from a report) does
not import the whole format.
"""
