"""Contract presets: named consumer profiles shipped as data, one ``NAME.toml`` each here;
``preset`` loads and merges them."""

from prebake.contract.presets.preset import (
    PRESETS_DIR,
    PresetError,
    load_preset,
    merge,
    preset_names,
)

__all__ = ["PRESETS_DIR", "PresetError", "load_preset", "merge", "preset_names"]
