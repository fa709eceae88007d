"""``inspect --json`` writes values with orjson: the bytes must be ``json.dumps``'s.

The command's documented output is ``json.dumps(…, indent=2, sort_keys=True,
ensure_ascii=False)``; ``render.json_value`` writes it with orjson (the ``json`` module indents
only in pure Python) and falls back to ``json`` for what orjson refuses. Generated values cover
what facts hold and what a hostile file can put there: any text (control characters, non-ASCII,
U+2028, lone surrogates from undecodable names), integers of any size, nested lists and tables.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from prebake.inspect.render import json_value

SCALARS = st.none() | st.booleans() | st.integers() | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


def _reference(v: Any, ind: str) -> str:
    return json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n" + ind)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.sampled_from(["", "    ", "      "]))
def test_json_value_is_json_dumps(v: Any, ind: str) -> None:
    assert json_value(v, ind) == _reference(v, ind)


def test_the_values_orjson_refuses_still_come_out() -> None:
    for v in (2**64, -(2**63) - 1, {"name": "lib\udc80.a"}, [1, "\ud800"]):
        assert json_value(v, "  ") == _reference(v, "  ")
