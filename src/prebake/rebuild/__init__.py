"""``prebake verify-rebuild``: a published asset rebuilt in a fresh folder from the workspace
that plans its input hash, and compared (``fresh``: the rebuild in a fresh folder;
``compare``: where two ``.tar.xz`` assets first differ)."""
