"""The reference, generated from the code's own tables so it cannot drift (``generate``).

``python -m prebake.reference`` writes ``docs/reference.md`` and the generated schemas;
``prebake help`` prints the same text.
"""

from prebake.reference.generate import (
    REGENERATE,
    MissingDescription,
    contract_keys,
    generated,
    render,
    toml_schema_text,
    write,
)

__all__ = ["REGENERATE", "MissingDescription", "contract_keys", "generated", "render",
           "toml_schema_text", "write"]
