"""CI: the GitHub Actions workflow generated from the plan (``github``), the release decision
its plan job makes (``decide``), the steps a leg runs (``leg``) and the CI defaults
(``defaults``, which the workspace loader reads without loading the rest).
"""
