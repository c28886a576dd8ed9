"""Sphinx configuration for the simaccept documentation."""
import os
import sys

# Make the repository root importable so autodoc finds simaccept, realsys, validation.
sys.path.insert(0, os.path.abspath(".."))

project = "simaccept"
author = "simaccept contributors"
copyright = "simaccept contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# validation/realsys.md is the realsys part of validation/index.md, kept standalone for GitHub
exclude_patterns = ["_build", "validation/realsys.md"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_mock_imports = []
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"

html_theme = "alabaster"
