"""CI: the GitHub Actions workflow generated from the plan (``github``), the release decision
its plan job makes (``decide``) and the steps a leg runs (``leg``). The CI defaults they use
are data the workspace loader reads too, so they live in ``prebake.model.ci_defaults``.
"""
