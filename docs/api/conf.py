"""Sphinx configuration of simcomm's API reference, built from the docstrings (numpydoc).

Build: ``python -m sphinx -b html docs/api docs/api/_build`` (``tests/test_api_docs.py`` builds it).
"""

project = "simcomm"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.mathjax", "numpydoc"]
autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False  # a package page lists its __all__, nothing else
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_validation_checks: set = set()
exclude_patterns = ["_build"]
html_theme = "alabaster"
suppress_warnings = ["autosummary", "autodoc.import_object"]
